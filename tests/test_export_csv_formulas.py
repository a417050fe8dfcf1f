"""CSV exports (attnviz/export.py) round 3 (issue 26, item 7 of the attack / 6 of the delivery):
the text row is the analysed text (the app turns control characters into spaces before the
model sees them: a CR LF sentence is exported as the model read it), and a cell that starts with
spaces or a full-width sign before a formula character is neutralised too (OWASP CSV injection).
Read back with csv and pandas."""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attnviz
from attnviz.export import CSV_FORMULA_CHARS, CSV_FORMULA_LOOKALIKES, csv_cell, csv_uncell, head_csv, read_head_csv
from attnviz.models.tokens import clean_text
from attnviz.result import Attention

LOOKALIKE_CELLS = [
    " =1+1",
    "  +SUM(A1:A2)",
    "\u00a0-2+3",
    "\u3000@cmd",
    "＝1+1",
    "＋1",
    "－1",
    "＠SUM(A1)",
    " ＝1+1",
    '\u3000＝HYPERLINK("http://evil.example")',
    "\u200b=1+1",
    "\ufeff=1",
    "﹦1+1",
    "−1+2",
    "' =1",
]
PLAIN_CELLS = ["a =1", "it's", "x＝1", "", " ", "　", "'", "ab", "1.5", "[CLS]"]


def _formula_to_a_spreadsheet(cell: str) -> bool:
    """What the attack found a spreadsheet takes as a formula: after white space and zero-width
    characters, one of the signs (full-width ones folded)."""
    stripped = cell.lstrip("".join(c for c in map(chr, range(0x3001)) if c.isspace()) + "\u200b\ufeff")
    return cell.startswith(CSV_FORMULA_CHARS) or stripped.startswith(CSV_FORMULA_LOOKALIKES)


@pytest.mark.parametrize("text", LOOKALIKE_CELLS)
def test_a_sign_after_spaces_or_in_full_width_is_neutralised_and_reads_back(text: str) -> None:
    cell = csv_cell(text)
    assert cell == "'" + text and not _formula_to_a_spreadsheet(cell)
    assert csv_uncell(cell) == text


@pytest.mark.parametrize("text", PLAIN_CELLS)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert csv_cell(text) == text and csv_uncell(text) == text


@given(st.text(alphabet=st.sampled_from([*"'= +-@ab1\t\r\n\0", "\u3000", "\u00a0", "＝", "－", "\u200b"]), max_size=8))
def test_the_rule_is_reversible_and_leaves_no_formula(text: str) -> None:
    cell = csv_cell(text)
    assert csv_uncell(cell) == text
    assert cell in (text, "'" + text)
    assert not _formula_to_a_spreadsheet(cell)


def _rows(out: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(out, newline="")))


def test_tokens_and_text_with_lookalike_signs_read_back_with_csv_and_pandas() -> None:
    tokens = ["[CLS]", " =1+1", "＝", "＋SUM(A1)", "－", "plain", "[SEP]"]
    n = len(tokens)
    w = np.random.default_rng(2).random((1, 1, n, n)).astype(np.float32)
    att = Attention(tokens=tokens, weights=w / w.sum(-1, keepdims=True), model="m", text=" ＝1+1 and more")
    out = head_csv(att, 0, 0)
    rows = _rows(out)
    start = next(i for i, r in enumerate(rows) if r[0] == "query \\ key")
    text_cells = [r[0] for r in rows] + rows[start][1:] + [r[1] for r in rows[:start]]
    assert not any(_formula_to_a_spreadsheet(c) for c in text_cells if c)
    settings, got_tokens, matrix = read_head_csv(out)
    assert settings["text"] == att.text and got_tokens == tokens
    np.testing.assert_allclose(matrix, att.head(0, 0), rtol=5e-6)
    table = pd.read_csv(io.StringIO(out), skiprows=start, header=None, dtype=str, keep_default_na=False)
    assert [csv_uncell(c) for c in table.iloc[0, 1:]] == tokens
    assert not any(_formula_to_a_spreadsheet(str(c)) for c in table.iloc[:, 0].tolist() + table.iloc[0].tolist())


def test_the_text_row_is_the_analysed_text(minilm: attnviz.PretrainedModel) -> None:
    """Typed with CR LF (and other control characters): the model reads them as spaces (tab and
    newline stay), so the CSV carries that text, and analysing it again gives the same tokens
    and weights: the export says what was analysed, not what the keyboard sent."""
    typed = "First line\r\nsecond\x0bline\x07 =1+1"
    att = minilm.attend(typed)
    assert att.text == clean_text(typed) == "First line \nsecond line  =1+1"
    out = head_csv(att, 1, 2, {"text": att.text, "model": att.model})  # what the app's download passes
    settings, tokens, matrix = read_head_csv(out)
    assert settings["text"] == att.text and tokens == att.tokens
    head_rows = pd.read_csv(io.StringIO(out), nrows=2, header=None, dtype=str, keep_default_na=False)
    assert csv_uncell(head_rows.iloc[0, 1]) == att.text
    again = minilm.attend(settings["text"])
    assert again.tokens == att.tokens
    np.testing.assert_allclose(again.head(1, 2), matrix, rtol=5e-6, atol=1e-7)
