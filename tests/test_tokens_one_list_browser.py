"""SmolLM2's token list in a real browser (Debian's chromium against `streamlit run app.py`): a
Chinese character the tokenizer cut into byte pieces shows once, and its pieces survive
st.html's sanitiser as the hover title of that character (its UTF-8 bytes, piece by piece)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from attnviz import i18n

from .smollm2_model import smollm2
from .test_browser import Session, _session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TEXT = "我爱北京。"
HOVERS_JS = """() => Array.from(document.querySelectorAll('.st-key-tokens code span[title]'))
  .map(e => [e.innerText, e.title])"""


@pytest.fixture
def zh_session(chromium: Any, server: str) -> Iterator[Session]:
    yield from _session(chromium, server, locale="zh-CN")


def test_a_character_cut_into_byte_pieces_shows_once_with_its_pieces_on_hover(zh_session: Session) -> None:
    raw = smollm2().attend(TEXT)
    cut = [TEXT[raw.spans[g[0]][0] : raw.spans[g[-1]][1]] for g in raw.character_groups() if len(g) > 1]
    zh_session.open({"model": "smollm2"})
    zh_session.submit(TEXT, list(TEXT))  # one token a character: 我 · 爱 · 北 · 京 · 。
    hovers = zh_session.page.evaluate(HOVERS_JS)
    assert [char for char, _ in hovers] == cut and cut  # 我 and 爱 at least were cut
    for char, title in hovers:
        pieces = re.fullmatch(i18n.t("decoder.pieces_hover", "zh", token=char, n=r"(\d+)", pieces="(.+)"), title)
        assert pieces is not None, title
        parts = pieces.group(2).split(" | ")
        assert len(parts) == int(pieces.group(1)) > 1
        assert bytes.fromhex("".join(parts)) == char.encode()  # the pieces' bytes are the character's
