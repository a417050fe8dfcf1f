"""The browser tests' pages (tests/browser.py: fresh_page): on the test process's Chromium profile
on disk, so the app's scripts are compiled once a process, yet each page starts with nothing of
the page before: no cookie, no local storage, no permission, and the locale, colour scheme and
window size its test asked for. A second page open at the same time is another browser."""

from __future__ import annotations

from typing import Any

import pytest

from .browser import _PROFILES, fresh_page

pytestmark = [pytest.mark.browser]

# the cookies a test set (Streamlit's own xsrf cookie comes with every page of the app's origin)
STATE_JS = """() => [document.cookie.split('; ').filter(c => c && !c.startsWith('_streamlit_xsrf')).join('; '),
  localStorage.length, navigator.language,
  matchMedia('(prefers-color-scheme: dark)').matches, innerWidth, innerHeight]"""


def _health(server: str) -> str:
    return f"{server}/_stcore/health"  # a page of the app's origin that loads no app


def test_a_page_has_nothing_of_the_page_before_and_the_options_of_its_own(chromium: Any, server: str) -> None:
    profile = _PROFILES[id(chromium)][1]
    with fresh_page(chromium, server, viewport={"width": 800, "height": 600}, locale="en-US") as page:
        assert profile.busy  # this page is the profile's
        page.goto(_health(server))
        page.context.grant_permissions(["clipboard-read"], origin=server)
        page.evaluate("() => { document.cookie = 'visitor=one; max-age=3600'; localStorage.setItem('seen', '1'); }")
        assert page.evaluate(STATE_JS) == ["visitor=one", 1, "en-US", False, 800, 600]
        first = page.context
    assert not profile.busy
    with fresh_page(
        chromium, server, viewport={"width": 390, "height": 844}, locale="zh-CN", color_scheme="dark"
    ) as page:
        assert page.context is first  # the same profile on disk, its caches kept
        page.goto(_health(server))
        assert page.evaluate(STATE_JS) == ["", 0, "zh-CN", True, 390, 844]
        permission = "() => navigator.permissions.query({name: 'clipboard-read'}).then(p => p.state)"
        assert page.evaluate(permission) == "prompt"


def test_a_second_page_open_at_once_is_another_browser(chromium: Any, server: str) -> None:
    with fresh_page(chromium, server) as first, fresh_page(chromium, server) as second:
        assert second.context is not first.context
        first.goto(_health(server))
        first.evaluate("() => { document.cookie = 'visitor=one; max-age=3600'; }")
        second.goto(_health(server))
        assert "visitor" not in second.evaluate("() => document.cookie")
    with fresh_page(chromium, server, accept_downloads=False, java_script_enabled=True) as page:
        assert page.context is not first.context  # options a page cannot take: a context of their own
