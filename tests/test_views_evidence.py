"""The evidence views (contribution_map, deletion_curves, layer_agreement): they draw the numbers
they are given, every word comes in the language asked for, tokens are escaped, and the JSON
is valid Plotly. Built on hand-made results (no model), with the helpers of test_views.py."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from attnviz import explain, views
from attnviz.explain import Contributions, Scoreboard, ScoreRow

from .test_views import HOSTILE, ZH_TOKENS, decode, english_words, shown_strings, views_escape


def contributions_of(tokens: list[str], method: str = "globenc", layers: int = 2, seed: int = 0) -> Contributions:
    n = len(tokens)
    rng = np.random.default_rng(seed)
    m = rng.random((layers, n, n)).astype(np.float32)
    m /= m.sum(-1, keepdims=True)
    rolled = np.stack([m[0], m[1] @ m[0]]).astype(np.float32)
    special = np.array([t.startswith("[") for t in tokens])
    return Contributions(method, tokens, m, rolled, special, model="hand")


def board_of(tokens: list[str], query: int | None = 2, extra: str | None = None) -> Scoreboard:
    n = len(tokens)
    rng = np.random.default_rng(1)
    removed = np.arange(0, n - 1)  # every ordinary token, one at a time
    rows = []
    for k, method in enumerate([*explain.SCOREBOARD_METHODS, *([extra] if extra else [])]):
        curve = np.concatenate([[0.0], np.sort(rng.random(len(removed) - 1))])
        whole = method in explain.CONTRIBUTION_METHODS
        layers = (rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2)) if whole else (None, None)
        rows.append(ScoreRow(method, 0.1 * k, 0.05 * k, float(curve.mean()), curve, rng.random(n), *layers))
    floor = np.linspace(0, 0.5, len(removed))
    rows.append(ScoreRow("random", math.nan, math.nan, float(floor.mean()), floor, np.full(n, np.nan)))
    special = np.array([t.startswith("[") for t in tokens])
    return Scoreboard(tokens, special, query, "hand", tuple(rows), removed, rng.random(n), rng.random((2, n)), 0.01)


def every_evidence_view(tokens: list[str], lang: str) -> dict[str, go.Figure]:
    c, board = contributions_of(tokens), board_of(tokens)
    return {
        "contribution_rolled": views.contribution_map(c, lang=lang),
        "contribution_layer": views.contribution_map(c, 1, zmax=1.0, lang=lang),
        "deletion": views.deletion_curves(board, highlight="alti", lang=lang),
        "deletion_sentence": views.deletion_curves(board_of(tokens, query=None), lang=lang),
        "layer_agreement": views.layer_agreement(board, lang=lang),
    }


def test_contribution_map_draws_the_rolled_map_or_one_layer() -> None:
    c = contributions_of(ZH_TOKENS)
    np.testing.assert_array_equal(decode(json.loads(views.contribution_map(c).to_json())["data"][0]["z"]), c.rolled)
    layer = views.contribution_map(c, 1)
    np.testing.assert_array_equal(layer.data[0].z, c.per_layer[1])
    assert "layer 1" in layer.layout.title.text and "GlobEnc" in layer.layout.title.text
    with pytest.raises(IndexError):
        views.contribution_map(c, 2)


def test_deletion_curves_draw_every_row_with_its_aopc_and_the_floor_dashed() -> None:
    board = board_of(ZH_TOKENS)
    fig = views.deletion_curves(board, highlight="alti")
    assert len(fig.data) == len(board.rows)
    for tr, row in zip(fig.data, board.rows, strict=True):
        np.testing.assert_allclose(tr.y, row.curve, atol=1e-6)
        assert f"AOPC {row.aopc:.3f}" in tr.name
        assert list(tr.customdata) == board.removed.tolist()
    np.testing.assert_allclose(fig.data[0].x, 100 * board.fractions, atol=0.05)
    assert fig.data[-1].line.dash == "dash" and fig.data[-1].name.startswith("random order")
    widths = {tr.name.split(" (")[0]: tr.line.width for tr in fig.data}
    assert widths["ALTI"] == 4 and widths["GlobEnc"] == 2


def test_your_own_scores_keep_their_name_escaped() -> None:
    fig = views.deletion_curves(board_of(ZH_TOKENS, extra="<b>mine</b>"))
    assert any(tr.name.startswith("&lt;b&gt;mine&lt;/b&gt;") for tr in fig.data)


def test_layer_agreement_shows_the_whole_layer_methods_in_two_panels() -> None:
    board = board_of(ZH_TOKENS)
    fig = views.layer_agreement(board)
    rolled, single = fig.data
    whole = [r for r in board.rows if r.layer_rolled is not None]
    np.testing.assert_allclose(rolled.z, [r.layer_rolled for r in whole], atol=1e-4)
    np.testing.assert_allclose(single.z, [r.layer_single for r in whole], atol=1e-4)
    assert (rolled.zmin, rolled.zmax) == (-1.0, 1.0) and len(rolled.y) == len(explain.CONTRIBUTION_METHODS)
    empty = board_of(ZH_TOKENS)
    object.__setattr__(empty, "rows", tuple(r for r in empty.rows if r.layer_rolled is None))
    with pytest.raises(ValueError):
        views.layer_agreement(empty)


@pytest.mark.parametrize("name", list(every_evidence_view(ZH_TOKENS, "en")))
def test_a_chinese_evidence_figure_has_no_english_word_left(name: str) -> None:
    strings = shown_strings(every_evidence_view(ZH_TOKENS, "zh")[name])
    assert any(re.search(r"[\u4e00-\u9fff]", s) for s in strings)
    names = {"GlobEnc", "ALTI", "AOPC", "Kobayashi", "Value", "Zeroing", "rollout", "MASK", "Spearman"}  # names
    left = {s: [w for w in english_words(s, ZH_TOKENS) if w not in names] for s in strings}
    assert {s: words for s, words in left.items() if words} == {}


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", list(every_evidence_view(ZH_TOKENS, "en")))
def test_evidence_views_are_valid_plotly_and_escape_tokens(name: str, lang: str) -> None:
    fig = every_evidence_view(HOSTILE, lang)[name]
    spec = json.loads(pio.to_json(fig))
    assert json.loads(pio.to_json(go.Figure(spec))) == spec
    for s in shown_strings(fig):
        assert "<script" not in s.lower() and "<img" not in s.lower(), (name, s)
    if name.startswith("contribution"):
        whole = views_escape(HOSTILE[1])
        assert f"{whole} (1)" in fig.layout.xaxis.categoryarray  # what hover names, whole
        label = fig.layout.xaxis.ticktext[1]  # on the axis, shortened to fit its margin (views/margins.py)
        assert label == whole or (label.endswith("…") and whole.startswith(label[:-1]))


def test_a_token_query_is_named_escaped_in_the_titles() -> None:
    fig = views.deletion_curves(board_of(HOSTILE, query=1))
    assert views_escape(HOSTILE[1]) in fig.layout.title.text and "<script>" not in fig.layout.title.text


def test_every_evidence_key_the_app_builds_exists_in_both_languages() -> None:
    """Keys the app and the views put together at run time (the literal ones are checked by
    tests/test_i18n.py)."""
    from attnviz import i18n

    keys = [
        *(f"method.{m}" for m in (*explain.SCOREBOARD_METHODS, "random")),
        *(f"cx.about_{m}" for m in explain.CONTRIBUTION_METHODS),
        "cx.view_traced",
        "cx.view_layer",
        "fx.best",
        "fx.best_weak",
        "fx.doubt_title",
        "sinks.table_title",
    ]
    for lang in i18n.LANGUAGES:
        assert [k for k in keys if k not in i18n.catalogue(lang)] == [], lang
