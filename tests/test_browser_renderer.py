"""The browser tests' Chromium keeps one renderer process for the tabs of a context (tests/browser.py:
TEST_ARGS and keep_renderer): each test's new tab joins it instead of starting one, which spent a
fifth of the machine's CPU of a visit again. A tab is still a document of its own: the next tab
of the context sees nothing of the last one's page."""

from __future__ import annotations

from typing import Any

import psutil
import pytest

from .test_browser import _session

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _renderers() -> set[int]:
    """Chromium's renderer processes under this test process (its shared browser's)."""
    found = set()
    for proc in psutil.Process().children(recursive=True):
        try:
            if "--type=renderer" in proc.cmdline():
                found.add(proc.pid)
        except psutil.Error:
            continue
    return found


def test_each_new_tab_of_a_pooled_context_joins_its_renderer_and_starts_clean(chromium: Any, server: str) -> None:
    seen = []
    for visit in range(3):
        for s in _session(chromium, server):
            s.open()
            assert s.page.evaluate("() => window.__attnvizVisit ?? null") is None  # nothing of the last tab
            s.page.evaluate(f"() => {{ window.__attnvizVisit = {visit}; }}")
            seen.append(_renderers())
    assert seen[0], "no renderer found under this test process"
    assert set().union(*seen) == seen[0], seen  # the second and third tabs started no renderer
