"""Several real browser sessions at once against one server (scripts/loadtest.py; the full
runs and their figures are in docs/RELIABILITY.md): each session always sees its own tokens and
no analysis fails; a cold server survives eight first visits at once to every page; and two
visitors running the heaviest explanation do not hold up a third one's new sentence.

The first and the last share one server of this module (a server start is a Python with torch,
Streamlit and a model load); the cold-server test starts its own, as it must."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator

import pytest

from attnviz.app import nav
from scripts import loadtest
from scripts.loadtest import PAGES, cold_start

from .browser import chromium_path, streamlit_server

pytestmark = [pytest.mark.slow, pytest.mark.browser]
ASYNC_PLAYWRIGHT = True  # tests/conftest.py closes the shared sync Chromium before this module


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    chromium_path()  # skip (or fail in CI) before starting a server when there is no browser
    with streamlit_server() as (url, proc):
        yield url, proc


def test_concurrent_sessions_see_only_their_own_tokens(served: tuple[str, subprocess.Popen[bytes]]) -> None:
    """Four sessions at once, two sentences each (each session's second sentence is sent while
    the others' are in flight): the same property as scripts/loadtest.py's 8 x 200, at CI size."""
    url, proc = served
    report = asyncio.run(loadtest.drive(url, proc.pid, sessions=4, analyses=8, max_seconds=240))
    assert report.crosstalk == []
    assert report.failures == []
    assert report.analyses == 8


def test_a_cold_server_takes_eight_first_visits_to_every_page_at_once() -> None:
    """Two of eight first visits used to get an exception page (plotly's lazy pandas import
    raced across script threads), and a first visit to /lab ran pages/lab.py without app.py
    (Streamlit's legacy multipage mode, decided by the first session). Each visit is also
    tests/test_offline.py's check: that page at its typed URL (its title), its charts drawn and
    its fonts loaded, and nothing asked of a host other than the loopback; and the page never
    asked for Streamlit's syntax highlighter once its copy box was drawn (issue 24.1)."""
    chromium_path()
    visits = cold_start()
    assert {path for path, _, _ in visits} == set(PAGES) == {"", *(p.name for p in nav.PAGES)}
    assert [(path, problem) for path, _, problem in visits if problem] == []


def test_two_heavy_explanations_do_not_hold_up_a_new_sentence(served: tuple[str, subprocess.Popen[bytes]]) -> None:
    """While two sessions compute occlusion and input x gradient at 512 tokens (minutes of CPU),
    a third session's new sentences are drawn before either explanation ends: interactive passes
    go first and explanation batches wait for them. (How fast is measured, not asserted:
    `scripts/loadtest.py --scenario stall`.) Last in this module: the server that ran the
    heavy work stops with it."""
    report = asyncio.run(loadtest._stall(served[0], rounds=2))
    assert report.failures == []
    assert len(report.latencies) == 2
    assert report.heavy_running == [True, True]
