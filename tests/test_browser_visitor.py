"""One budget per visitor, not per tab (issue 26.2), in real Chromium: the app sets a random
visitor cookie on a first visit, a second tab of the same browser arrives with it and shares the
first tab's spending, and another browser (a new context: no cookie) does not. With a 4 s
budget, the visitor's tabs compute the Explain page's methods at about 120 tokens until one
says it is past its share; the second tab's first explanation then says so at once, and the
other browser's first explanation does not."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from attnviz import i18n

from .browser import streamlit_server

pytestmark = [pytest.mark.slow, pytest.mark.browser]

WORDS = [
    *["the", "river", "bank", "was", "wide", "and", "the", "money", "in", "the", "bank", "was", "safe"],
    "because",
    "it",
    "was",
    "tired",
]
OVER = i18n.t("fair.over_share", "en", minutes=10)


@pytest.fixture(scope="module")
def url(chromium: Any) -> Iterator[str]:
    with streamlit_server(env={"ATTNVIZ_BUDGET_S": "4"}) as (base, _proc):
        yield base


def _explain(context: Any, url: str, shift: int) -> Any:
    """Open Explain on a ~120-token text of its own and start the attributions."""
    words = (WORDS * 10)[shift : shift + 120]
    page = context.new_page()
    page.set_default_timeout(240_000)
    page.goto(f"{url}/explain?" + urllib.parse.urlencode({"text": " ".join(words)}))
    page.locator(".st-key-x_compute button").click()
    page.locator('[data-testid="stProgress"]').first.wait_for()
    return page


def _done(page: Any) -> None:
    page.locator(".st-key-explain_agreement").wait_for(timeout=300_000)


def test_a_second_tab_shares_the_first_tabs_budget_and_another_browser_does_not(chromium: Any, url: str) -> None:
    visitor = chromium.new_context()
    first = _explain(visitor, url, 0)
    cookies = {c["name"]: c["value"] for c in visitor.cookies()}
    assert re.fullmatch(r"[0-9a-f]{32}", cookies.get("attnviz_visitor", "")), cookies
    _done(first)
    for shift in range(1, 8):  # this visitor's tabs compute until one of them is past the share
        if first.get_by_text(OVER).count():
            break
        first = _explain(visitor, url, 10 * shift)
        _done(first)
    assert first.get_by_text(OVER).count()
    second = _explain(visitor, url, 3)  # a new tab of the same browser: same cookie, same visitor
    second.get_by_text(OVER).first.wait_for(timeout=60_000)  # at its very first explanation
    other = _explain(chromium.new_context(), url, 5)  # another browser: a new visitor
    assert other.get_by_text(OVER).count() == 0  # its first explanation runs as anyone's would
