"""Light elements instead of st.code (issue 24.1/24.5): the tokens and other literal text shown
through app/literal.py (escaped st.html, no highlighter chunk), the share link through
app/copy_link.py (a tiny v2 component). No page sends an st.code element any more, so no page
load fetches Streamlit's 1.5 MB syntax highlighter. A real browser: test_light_elements_browser.py."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from attnviz import i18n
from attnviz.app import copy_link, literal, nav, widgets

from .test_app import _literals
from .test_share_app import _app

ROOT = Path(__file__).resolve().parents[1]

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "**bold** _it_ `code` [a](javascript:alert(1))",
    "$x^2$ :red[danger] {{7*7}} ${x}",
    "</code></pre><b>out</b>",
    "&amp; &lt; &#60; \" ' \\ \t end",
    "line one\nline two\n   \n  indented\r\n",
    "[CLS]",
]


pytestmark = pytest.mark.usefixtures("local_deployment")


@pytest.mark.parametrize("text", HOSTILE)
def test_literal_text_is_escaped_and_reads_back_exactly(text: str) -> None:
    body = literal.body(text)
    assert literal.text_of(body) == text  # what shows is the text, character for character
    inner = body[body.index("<code") :]
    inner = inner[inner.index(">") + 1 : inner.rindex("</code>")]
    assert "<" not in inner and ">" not in inner and '"' not in inner  # nothing of it can open a tag
    assert "\n" not in body and html.unescape(inner) == text  # one line: st.html's dedent and strip keep it
    assert re.findall(r"<(/?[a-z]+)", body) == ["pre", "code", "/code", "/pre"]  # only our own tags


def test_literal_reads_nothing_from_other_html() -> None:
    assert literal.text_of("<p>hi</p>") is None
    assert literal.text_of("<script>x</script>") is None


def test_the_copy_button_sets_the_link_as_text_only() -> None:
    js = (ROOT / "attnviz" / "app" / "copy_link.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in js, sink
    assert "code.textContent = data.link" in js and "navigator.clipboard.writeText" in js


@pytest.mark.slow
def test_no_page_sends_st_code_and_the_explorer_shows_hostile_tokens_literally() -> None:
    text = "<script>alert(1)</script> **bold** $x$ {{}} <img src=x onerror=alert(1)>"
    at = _app(text=text, lang="en")
    assert not at.get("code")
    shown = _literals(at)
    assert shown, "no literal text on the explorer"
    tokens = shown[0].split(widgets.TOKEN_SEPARATOR)
    assert tokens[0] == "[CLS]" and "script" in tokens and "<" in tokens and "*" in tokens and "$" in tokens
    for spec in nav.PAGES[1:]:
        at.switch_page(f"../pages/{spec.name}.py").run()
        assert not at.exception, (spec.name, [e.value for e in at.exception])
        assert not at.get("code"), spec.name  # st.code would load the highlighter chunk


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_share_link_is_a_copy_box_in_the_page_language(lang: str) -> None:
    at = _app(text="dog bites man", lang=lang)
    boxes = [e for e in at.sidebar.get("bidi_component") if copy_link.link_of(e) is not None]
    assert len(boxes) == 1 and not at.sidebar.get("code")
    import json

    data = json.loads(boxes[0].proto.json)
    assert (data["copy"], data["copied"], data["failed"]) == tuple(
        i18n.t(k, lang) for k in ("copylink.copy", "copylink.copied", "copylink.failed")
    )
    assert "text=dog+bites+man" in data["link"] and f"lang={lang}" in data["link"]
    assert i18n.t("copylink.share", lang) in [c.value for c in at.sidebar.caption]
