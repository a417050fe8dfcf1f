"""Link limits in a real browser, through `streamlit run` (the sanitiser the websocket's rerun
goes through, which AppTest does not use): a link with a 49,000-character text written as a
browser writes it (a space as %20: 66,xxx characters) opens with that text in the box, and an
83,000-character `off=` beside it is named on the page with its length. Pure parts and AppTest:
tests/test_link_limits.py."""

from __future__ import annotations

import urllib.parse

import pytest

from attnviz import i18n

from .test_browser import FIRST_LOAD_MS, Session
from .test_link_limits import ENGLISH

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BOX_JS = "() => { const e = document.querySelector('.st-key-sentence_input textarea'); return e ? e.value : null; }"


def test_a_long_percent20_text_opens_and_an_oversize_off_is_named(session: Session, server: str) -> None:
    s = session
    s.open()  # the server has run app.py once: the guard is installed before the link's first run
    query = urllib.parse.urlencode({"text": ENGLISH}, quote_via=urllib.parse.quote)
    assert "%20" in query and len(query) > 64 * 1024
    s.page.goto(f"{server}/?{query}&off={'1.2_' * 20_750}")
    s.wait_views(timeout=FIRST_LOAD_MS)
    assert s.page.evaluate(BOX_JS) == ENGLISH
    off = i18n.t("links.why_long", "en", name="off", n="83,000", limit="4,096")
    alerts = " ".join(s.page.locator("[data-testid='stAlert']").all_inner_texts())
    assert i18n.t("links.removed", "en", names=off) in alerts, alerts[:500]
    assert "empty or longer" not in alerts and "more than the" not in alerts
