"""One budget per visitor, not per tab (issue 26.2), in real Chromium: the app sets a random
visitor cookie on a first visit, a second tab of the same browser arrives with it and shares the
first tab's spending, and another browser (a new context: no cookie) does not. With a 2 s
budget, the first tab computes occlusion at about 120 tokens (well past 2 s of model time); the
second tab's explanation then says it waits behind others, the other browser's does not."""

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
    with streamlit_server(env={"ATTNVIZ_BUDGET_S": "2"}) as (base, _proc):
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
    assert first.get_by_text(OVER).count() == 0  # a fresh visitor was within their share
    second = _explain(visitor, url, 1)  # same browser: same cookie, same visitor
    _done(second)
    assert second.get_by_text(OVER).count() == 1  # the notice stays under the finished result
    other = _explain(chromium.new_context(), url, 2)  # another browser: a new visitor
    _done(other)
    assert other.get_by_text(OVER).count() == 0
