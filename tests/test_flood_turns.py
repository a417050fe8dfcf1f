"""Page runs shared fairly, server-wide (app/server/budget.py `page_turn`, issue 26.2 / 24.3): ten tabs of
one visitor flooding the explorer must not keep a new visitor's first page waiting. At most
PAGE_SLOTS page runs go at once and PER_VISITOR_RUNS of one visitor are under way; a run waits,
or pauses at its next checkpoint (each message it sends), while a visitor who has cost the server
YIELD_MARGIN_S less is waiting or going; a pause never happens while the run holds a model pass's
slot and never lasts past MAX_PAUSE_S. Event-based: each test waits for a state the threads
reach, with a deadline."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from attnviz.app.server import budget
from attnviz.models.gate import ForwardGate
from tests.waiting import until as _until

FLOODER, NEWCOMER = "c:" + "f" * 32, "c:" + "0" * 32


_STARTED: list[Runs] = []  # every test's runs, released at its end even when it failed


def clean_page_runs() -> Iterator[None]:
    """Around a test (its module's autouse fixture: `yield from`): no spending before it; after it,
    no page run left behind and every run it started released."""
    budget.clear()
    yield
    left = budget.PAGE_RUNS.counts()
    while _STARTED:  # a failed test's runs would hold the slots of every later test in this process
        _STARTED.pop().join()
    assert left == (0, 0, 0), "a page run was left behind"
    budget.clear()


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    yield from clean_page_runs()


class Runs:
    """Page runs on threads: each takes its turn, records when it goes on, and calls
    `checkpoint()` (as the app does on every message) until it is released."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.lock = threading.Lock()
        self.release: dict[str, threading.Event] = {}
        self.threads: list[threading.Thread] = []
        _STARTED.append(self)

    def start(self, name: str, visitor: str, poll: Callable[[], None] | None = None) -> None:
        done = self.release[name] = threading.Event()

        def body() -> None:
            with budget.page_turn(visitor, wait=poll, poll_s=0.01) as turn:
                self.note(f"go {name}")
                while not done.wait(0.005):
                    before = turn.pauses
                    turn.checkpoint()
                    if turn.pauses > before:
                        self.note(f"resumed {name}")

        th = threading.Thread(target=body, daemon=True)
        th.start()
        self.threads.append(th)

    def note(self, line: str) -> None:
        with self.lock:
            self.log.append(line)

    def has(self, line: str) -> bool:
        with self.lock:
            return line in self.log

    def finish(self, *names: str) -> None:
        for name in names or tuple(self.release):
            self.release[name].set()

    def join(self) -> None:
        self.finish()
        for th in self.threads:
            th.join(10)
            assert not th.is_alive()


def test_a_newcomer_goes_at_once_and_the_flooders_runs_pause_until_it_is_done() -> None:
    """Ten tabs of one visitor who has cost the server a lot: two of their runs go, the rest wait;
    a new visitor's run goes at the flooder's next checkpoint, and no run of the flooder goes on
    until the newcomer's run is over."""
    budget.charge(FLOODER, 60.0)
    runs = Runs()
    for i in range(10):
        runs.start(f"f{i}", FLOODER)
    _until(lambda: budget.PAGE_RUNS.counts() == (2, 0, 8), "two of the flooder's runs go, eight wait")
    runs.start("newcomer", NEWCOMER)
    _until(lambda: runs.has("go newcomer"), "the newcomer's run goes")
    _until(lambda: budget.PAGE_RUNS.counts() == (1, 2, 8), "both flooder runs paused while it goes")
    mark = len(runs.log)
    runs.finish("newcomer")
    _until(lambda: budget.PAGE_RUNS.counts()[:2] == (2, 0), "the flooder's two runs go on after it")
    _until(lambda: sum(line.startswith("resumed") for line in runs.log[mark:]) == 2, "both paused runs resumed")
    assert not any(line.startswith("go f") for line in runs.log[mark:])  # those two, not new ones
    runs.join()


def test_one_visitor_has_at_most_two_runs_under_way_and_the_rest_go_in_arrival_order() -> None:
    runs = Runs()

    def entered(n: int) -> bool:
        going, _, waiting = budget.PAGE_RUNS.counts()
        return going + waiting == n

    for i in range(5):
        runs.start(f"f{i}", FLOODER)
        _until(lambda: entered(i + 1), "queued in arrival order")  # noqa: B023 (used at once)
    _until(lambda: budget.PAGE_RUNS.counts() == (2, 0, 3), "two under way")
    for i in range(5):
        runs.finish(f"f{i}")
        _until(lambda: runs.has(f"go f{i}"), f"f{i} went")  # noqa: B023
    runs.join()
    assert [line for line in runs.log if line.startswith("go")] == [f"go f{i}" for i in range(5)]


def test_at_most_page_slots_runs_go_at_once_server_wide() -> None:
    """Three visitors past their first seconds who cost the same: two runs go, the third waits
    for a slot (not for a pause)."""
    runs = Runs()
    for name in ("a", "b", "c"):
        budget.charge(f"c:{name * 32}", 10.0)
        runs.start(name, f"c:{name * 32}")
    _until(lambda: budget.PAGE_RUNS.counts() == (budget.PAGE_SLOTS, 0, 1), "two go, one waits")
    first = next(line for line in runs.log if line.startswith("go"))[3:]
    runs.finish(first)
    _until(lambda: sum(line.startswith("go") for line in runs.log) == 3, "the third goes once a slot is free")
    runs.join()


def test_newcomers_all_go_at_once_as_on_a_cold_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight first visits at once, where MAX_UNDER_WAY allows ten runs under way: none waits for
    a slot, and a newcomer goes even while two runs of a flooder hold the slots (the bound itself:
    tests/test_flood_bounds.py)."""
    monkeypatch.setattr(budget, "MAX_UNDER_WAY", 10)
    budget.charge(FLOODER, 60.0)
    runs = Runs()
    runs.start("f0", FLOODER)
    runs.start("f1", FLOODER)
    _until(lambda: budget.PAGE_RUNS.counts()[0] == 2, "the flooder holds both slots")
    for i in range(8):
        runs.start(f"new{i}", f"c:{i:032x}")
    _until(lambda: all(runs.has(f"go new{i}") for i in range(8)), "all eight newcomers go")
    runs.join()


def test_a_page_runs_wall_time_counts_against_its_visitor() -> None:
    """Page runs spend most of their time outside the model: their wall time is charged too, so a
    visitor whose runs took long waits behind one who has cost nothing."""
    runs = Runs()
    runs.start("long", FLOODER)
    _until(lambda: runs.has("go long"), "the long run goes")
    _until(lambda: budget.PAGE_RUNS.cost(FLOODER, time.monotonic()) > budget.YIELD_MARGIN_S, "it costs time")
    runs.finish("long")
    runs.join()
    assert budget.PAGE_RUNS.cost(FLOODER, time.monotonic()) > budget.YIELD_MARGIN_S  # charged after its end
    assert budget.PAGE_RUNS.cost(NEWCOMER, time.monotonic()) == 0.0


def test_no_pause_while_the_run_holds_a_model_pass_and_none_past_max_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run paused inside a model pass would hold the slot the newcomer needs; and whatever the
    newcomer waits on, a paused run goes on after MAX_PAUSE_S."""
    monkeypatch.setattr(budget, "MAX_PAUSE_S", 0.2)
    budget.charge(FLOODER, 60.0)
    runs = Runs()
    gate = ForwardGate()
    with budget.page_turn(FLOODER, poll_s=0.01) as turn:
        runs.start("newcomer", NEWCOMER)
        _until(lambda: runs.has("go newcomer"), "the newcomer goes")
        with gate.interactive():
            turn.checkpoint()
            assert turn.pauses == 0
        turn.checkpoint()  # outside the pass: it pauses, and goes on after MAX_PAUSE_S
        assert turn.pauses == 1 and not runs.release["newcomer"].is_set()
        assert budget.PAGE_RUNS.counts()[0] == 2  # going again, beside the newcomer
    runs.join()


def test_a_waiting_run_that_is_stopped_leaves_no_trace() -> None:
    """A newer rerun of the tab stops a waiting run (the app's wait line raises there): its place
    and its visitor's count are given back."""
    budget.charge(FLOODER, 60.0)
    runs = Runs()
    runs.start("a", FLOODER)
    runs.start("b", FLOODER)
    _until(lambda: budget.PAGE_RUNS.counts() == (2, 0, 0), "two going")
    calls: list[int] = []

    class Rerun(Exception):
        pass

    def stop() -> None:
        calls.append(1)
        raise Rerun

    with pytest.raises(Rerun), budget.page_turn(FLOODER, wait=stop, poll_s=0.01):
        pytest.fail("the third run of one visitor went in")
    assert calls == [1] and budget.PAGE_RUNS.counts() == (2, 0, 0)
    runs.join()
