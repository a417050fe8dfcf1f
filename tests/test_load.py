"""Several real browser sessions at once against one server (scripts/loadtest.py; the full
runs and their figures are in docs/RELIABILITY.md): each session always sees its own tokens and
no analysis fails; a cold server survives eight first visits at once to every page; and two
visitors running the heaviest explanation do not hold up a third one's new sentence."""

from __future__ import annotations

import pytest

from attnviz.app import nav
from scripts.loadtest import PAGES, cold_start, run, stall

from .browser import chromium_path

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def test_concurrent_sessions_see_only_their_own_tokens() -> None:
    chromium_path()  # skip (or fail in CI) before starting a server when there is no browser
    report = run(sessions=8, analyses=16, max_seconds=240)
    assert report.crosstalk == []
    assert report.failures == []
    assert report.analyses == 16


def test_a_cold_server_takes_eight_first_visits_to_every_page_at_once() -> None:
    """Two of eight first visits used to get an exception page (plotly's lazy pandas import
    raced across script threads), and a first visit to /lab ran pages/lab.py without app.py
    (Streamlit's legacy multipage mode, decided by the first session)."""
    chromium_path()
    visits = cold_start()
    assert {path for path, _, _ in visits} == set(PAGES) == {"", *(p.name for p in nav.PAGES)}
    assert [(path, problem) for path, _, problem in visits if problem] == []


def test_two_heavy_explanations_do_not_hold_up_a_new_sentence() -> None:
    """While two sessions compute occlusion and input x gradient at 512 tokens (minutes of CPU),
    a third session's new sentences are drawn before either explanation ends: interactive passes
    go first and explanation batches wait for them. (How fast is measured, not asserted:
    `scripts/loadtest.py --scenario stall`.)"""
    chromium_path()
    report = stall(rounds=2)
    assert report.failures == []
    assert len(report.latencies) == 2
    assert report.heavy_running == [True, True]
