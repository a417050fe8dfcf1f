"""Several real browser sessions at once against one server: each always sees its own tokens
and no analysis fails (the full 8-session, 200-analysis run with memory figures is
scripts/loadtest.py; its results are in docs/RELIABILITY.md)."""

from __future__ import annotations

import pytest

from scripts.loadtest import run

from .browser import chromium_path


@pytest.mark.slow
def test_concurrent_sessions_see_only_their_own_tokens() -> None:
    chromium_path()  # skip (or fail in CI) before starting a server when there is no browser
    report = run(sessions=8, analyses=16, max_seconds=240)
    assert report.crosstalk == []
    assert report.failures == []
    assert report.analyses == 16
