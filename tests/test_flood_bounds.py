"""Page runs that may start are bounded (app/server/budget.py `_may_start`): cookie-less tabs all look
new, and a run under way (going or paused) holds its results in memory, so no run starts while
MAX_UNDER_WAY are under way, nor, while PAGE_SLOTS are, past the server's memory budget (a
newcomer's) or once one more run (RUN_HEADROOM_MB) could take it past (anyone else's); a run that
may not start outranks nobody (the runs under way do not pause for it), and it starts, costing
least, as soon as one ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from attnviz.app.server import budget
from attnviz.models import gate
from tests.test_flood_turns import FLOODER, Runs, clean_page_runs
from tests.waiting import until as _until


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    try:
        yield from clean_page_runs()
    finally:
        gate.configure(memory_mb=0)


def _flooder_holds_both_slots(runs: Runs) -> None:
    budget.charge(FLOODER, 60.0)
    runs.start("f0", FLOODER)
    runs.start("f1", FLOODER)
    _until(lambda: budget.PAGE_RUNS.counts()[0] == 2, "the flooder holds both slots")


def test_no_run_starts_past_max_under_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three under way at most: the flooder's two (paused for the newcomer, still holding their
    results) and one newcomer; the next newcomer starts only when that one ends."""
    monkeypatch.setattr(budget, "MAX_UNDER_WAY", 3)
    runs = Runs()
    _flooder_holds_both_slots(runs)
    names = [f"new{i}" for i in range(3)]
    for i, name in enumerate(names):
        runs.start(name, f"c:{i:032x}")
    for step in range(3):
        _until(lambda: sum(runs.has(f"go {n}") for n in names) == step + 1, f"newcomer {step + 1} starts")  # noqa: B023
        under = budget.PAGE_RUNS.counts()
        _until(lambda: budget.PAGE_RUNS.counts()[2] == 2 - step, "the rest wait to start")  # noqa: B023
        assert sum(budget.PAGE_RUNS.counts()[:2]) <= 3, under
        runs.finish(*(n for n in names if runs.has(f"go {n}")))
    runs.join()


def test_past_the_memory_budget_a_newcomer_waits_for_a_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    gate.configure(memory_mb=1500)
    monkeypatch.setattr(gate, "rss_mb", lambda: 1600.0)
    runs = Runs()
    _flooder_holds_both_slots(runs)
    runs.start("new", "c:" + "1" * 32)
    _until(lambda: budget.PAGE_RUNS.counts() == (2, 0, 1), "the newcomer waits")
    assert not runs.has("go new")
    runs.finish("f0")
    _until(lambda: runs.has("go new"), "the newcomer takes the first slot that frees")
    runs.join()


def test_under_the_memory_budget_a_newcomer_goes_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    gate.configure(memory_mb=1500)
    monkeypatch.setattr(gate, "rss_mb", lambda: 1500.0 - budget.RUN_HEADROOM_MB - 50.0)
    runs = Runs()
    _flooder_holds_both_slots(runs)
    runs.start("new", "c:" + "1" * 32)
    _until(lambda: runs.has("go new"), "the newcomer goes beside the flooder's two runs")
    runs.join()


def test_a_third_run_waits_when_it_could_take_the_server_past_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the budget, but not by a run's headroom: the server is at 1,300 MB of 1,500 and one
    more 512-token run may add 250 MB, so a visitor who has used the server already waits for one
    of the two to end, while a newcomer's first page still starts at once."""
    gate.configure(memory_mb=1500)
    monkeypatch.setattr(gate, "rss_mb", lambda: 1500.0 - budget.RUN_HEADROOM_MB + 50.0)
    runs = Runs()
    _flooder_holds_both_slots(runs)
    regular = "c:" + "2" * 32
    budget.charge(regular, budget.NEWCOMER_S + 1.0)
    runs.start("regular", regular)
    _until(lambda: budget.PAGE_RUNS.counts() == (2, 0, 1), "the regular visitor waits")
    runs.start("new", "c:" + "3" * 32)
    _until(lambda: runs.has("go new"), "the newcomer goes beside the flooder's two runs")
    assert not runs.has("go regular")
    runs.finish("new", "f1")
    _until(lambda: runs.has("go regular"), "the regular visitor takes the slot that frees")
    runs.join()
