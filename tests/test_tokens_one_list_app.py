"""One token list per result on the pages (AppTest, no browser): SmolLM2's explorer counts, lists
and numbers the same merged characters in its token list and its logit-lens picker, each cut
character with its byte pieces on hover, and its next-word table names characters, not bytes;
e5-small's explorer and lesson show the same tokens, and no byte-merge caption."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import i18n
from attnviz.app import literal

from .smollm2_model import smollm2

APP = str(Path(__file__).resolve().parent / "app_entry.py")
TIMEOUT = 300
XIAOMING = "小明把书还给了老师，因为他已经读完了。"
ANIMAL = "动物没有过马路，因为它太累了。"

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_deployment")]


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    return _ok(at.run())


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _token_list(at: AppTest) -> tuple[str, list[str]]:
    """The token list's HTML body and its tokens (the first literal element of the page)."""
    body = next(h.proto.body for h in at.get("html") if literal.text_of(h.proto.body) is not None)
    return body, str(literal.text_of(body)).split(" · ")


def _captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption]


def test_smollm2s_explorer_counts_lists_and_numbers_one_list_of_characters() -> None:
    raw = smollm2().attend(XIAOMING)
    merged = raw.merge_characters()
    at = _app(text=XIAOMING, model="smollm2", lang="zh")
    body, shown = _token_list(at)
    assert shown == merged.tokens == list(XIAOMING)  # each character once, not once a piece
    assert i18n.t("tokens.label", "zh", n=merged.n) in _captions(at)
    assert i18n.t("decoder.byte_pieces", "zh") in _captions(at)
    # the logit lens reads the same list, numbered 0..m-1 as every other picker of the page
    picker = at.selectbox(key="dec_lens_pos")
    assert picker.options == [f"{j}: {tok}" for j, tok in enumerate(merged.tokens)]
    assert picker.value == merged.n - 1
    # each character cut into pieces carries them on hover: 小 is E5 B0 8F, in two tokens
    titles = re.findall(r'<span title="([^"]*)"', body)
    assert len(titles) == sum(len(g) > 1 for g in raw.character_groups())
    assert titles[0] == i18n.t("decoder.pieces_hover", "zh", token="小", n=2, pieces="E5 B0 | 8F")
    column = i18n.t("dec.next_token", "zh")
    table = next(d.value for d in at.dataframe if column in d.value.columns)
    labels = [str(v) for v in table[column]]
    assert not any("<0x" in label for label in labels), labels
    assert any(label.startswith("「") and "」的一部分" in label for label in labels), labels
    # the logit lens beside it (at the last token) names the same pieces the same way
    lens = next(d.value for d in at.dataframe if i18n.t("dec.lens_layer", "zh") in d.value.columns)
    cells = [str(v) for col in lens.columns for v in lens[col]]
    assert not any("<0x" in cell for cell in cells), cells
    last = [str(v) for v in lens.iloc[-1].tolist()[1:]]
    assert [cell.rsplit("（", 1)[0] for cell in last] == labels[: len(last)]


def test_e5_smalls_explorer_and_lesson_show_the_same_tokens() -> None:
    att = attnviz.load_model("e5-small", device="cpu").attend(ANIMAL)
    at = _app(text=ANIMAL, model="e5-small", lang="zh")
    body, explorer = _token_list(at)
    assert explorer == att.tokens and len(explorer) == 14  # <s> ␣ 动物 ... </s>, nothing merged
    assert i18n.t("tokens.label", "zh", n=att.n) in _captions(at)
    assert i18n.t("decoder.byte_pieces", "zh") not in _captions(at)  # e5 cuts no character into bytes
    assert "<span" not in body
    _ok(at.switch_page("../pages/lesson.py").run())
    _, lesson = _token_list(at)
    assert lesson == explorer
