"""Light elements in a real browser (issue 24.1/24.5): the explorer's hostile tokens show as
literal, inert, monospaced and wrapped text, and the sidebar's copy button puts the exact link on
the clipboard, in English and in Chinese. That no page load fetches Streamlit's syntax highlighter
(StreamlitSyntaxHighlighter.*.js, 1.5 MB, about 0.3 s of a load's main thread) is checked on
every page's first visit to a cold server (tests/test_load.py, scripts/loadtest.py:
`_code_problem`), not by another walk of every page. Pure parts: tests/test_light_elements.py."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

import attnviz
from attnviz import i18n

from .test_browser import CLEAN, INJECTED_JS, SEPARATOR, WAIT_MS, Session, _session

pytestmark = pytest.mark.browser

TEXT = "The animal didn't cross the street because it was too tired."
HOSTILE = "<script>alert(1)</script> <img src=x onerror=alert(1)> **bold** $x^2$ {{7*7}} :red[danger]"
LINK_JS = """() => { const c = document.querySelector('.st-key-share_link code');
  return c && c.textContent.includes('text=') ? c.textContent : null; }"""
# What the token block holds: our <pre><code> and nothing a token could have made of itself.
TOKENS_DOM_JS = """() => { const pre = document.querySelector('.st-key-tokens pre');
  const code = pre && pre.querySelector('code');
  if (!code) return null;
  const cs = getComputedStyle(code), ps = getComputedStyle(pre);
  return {pre_children: pre.children.length, code_children: code.children.length,
          font: cs.fontFamily, white_space: ps.whiteSpace,
          overflow: pre.scrollWidth - pre.clientWidth}; }"""


@pytest.fixture
def clipboard_session(chromium: Any, server: str) -> Iterator[Session]:
    yield from _session(chromium, server, permissions=["clipboard-read", "clipboard-write"])


def test_hostile_tokens_show_literally_and_inert(session: Session, minilm: attnviz.PretrainedModel) -> None:
    s = session
    s.open({"text": HOSTILE, "lang": "en"})
    want = SEPARATOR.join(minilm.encode(HOSTILE).tokens)
    s.wait_tokens(list(minilm.encode(HOSTILE).tokens))
    assert s.tokens_text() == want
    dom = s.page.evaluate(TOKENS_DOM_JS)
    assert dom is not None
    assert dom["pre_children"] == 1 and dom["code_children"] == 0  # text only: no tag made of a token
    assert "mono" in dom["font"].lower() or "code" in dom["font"].lower(), dom["font"]
    assert dom["white_space"] == "pre-wrap" and dom["overflow"] <= 1  # wrapped, kept as typed
    assert s.page.evaluate(INJECTED_JS) == CLEAN
    assert not s.dialogs and not s.crashed


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_copy_button_puts_the_exact_link_on_the_clipboard(
    clipboard_session: Session, server: str, lang: str
) -> None:
    s = clipboard_session
    s.open({"text": TEXT, "lang": lang})
    s.page.wait_for_function(LINK_JS, timeout=WAIT_MS)
    code = s.page.locator(".st-key-share_link code")
    link = str(code.text_content())
    assert link.split("?")[0].rstrip("/") == server and f"lang={lang}" in link  # the page's own address
    shown = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(link).query))
    assert shown == s.query()  # the link says what the address bar says
    assert code.evaluate("(c) => getComputedStyle(c).userSelect") != "none"  # selectable by hand
    button = s.page.locator(".st-key-share_link [data-attnviz-copy] button")
    assert button.inner_text() == i18n.t("copylink.copy", lang)
    button.click()
    s.page.wait_for_function(
        "() => document.querySelector('.st-key-share_link [data-attnviz-copy]')?.dataset.copied === 'yes'",
        timeout=WAIT_MS,
    )
    assert button.inner_text() == i18n.t("copylink.copied", lang)
    assert s.page.evaluate("() => navigator.clipboard.readText()") == link
    assert not s.dialogs and not s.crashed
