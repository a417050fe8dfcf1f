"""Heavy work steps out of the page runs (app/server/budget.py `aside`): a page run that waits in the
heavy queue (or goes on in it) holds none of the MAX_UNDER_WAY places, so ten sessions' queued
explanations cannot keep a new visitor's first page waiting (the heavy load test, 2026-12-04:
four explain runs waiting for their turn in the heavy queue held all four places and a new
visitor waited 68-144 s with the machine half idle). After its heavy work a run takes its turn
again, as a pause does: for MAX_PAUSE_S at most, since the work may have run inside a lock that
the runs under way wait for. A run aside still holds its results and is still its visitor's tab:
it counts for the memory check and for PER_VISITOR_RUNS (the load test, 2026-12-05: the new
visitors drawn in 16.2-20.2 s and 5.3-6.1 s after the change, 50.6-164.8 s before)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import pytest

from attnviz.app.server import budget
from attnviz.models import gate
from tests.test_flood_turns import NEWCOMER, Runs, clean_page_runs
from tests.waiting import until as _until

REGULARS = [f"c:{i:032x}" for i in range(1, 7)]


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    try:
        yield from clean_page_runs()
        assert gate.heavy_queue().counts() == (0, 0), "heavy work was left behind"
        assert not budget.PAGE_RUNS.aside, "a run was left aside"
    finally:
        gate.configure(memory_mb=0)


class HeavyRuns(Runs):
    """Page runs whose body is heavy work: aside, admitted through gate.heavy, held until
    released; each notes when it is admitted and when its page run goes on after it."""

    def heavy(self, name: str, visitor: str, free: threading.Event) -> None:
        done = self.release[name] = threading.Event()

        def body() -> None:
            with budget.page_turn(visitor, poll_s=0.01) as turn:
                self.note(f"go {name}")
                with budget.aside(), gate.heavy(visitor, poll_s=0.01):
                    self.note(f"admitted {name}")
                    while not free.wait(0.005):
                        turn.checkpoint()  # its progress bar: nothing to pause while aside
                    self.note(f"worked {name}")
                self.note(f"back {name}")
                done.wait(0)

        th = threading.Thread(target=body, daemon=True)
        th.start()
        self.threads.append(th)


@contextlib.contextmanager
def heavy_slots_held(hold_s: float = 10.0) -> Iterator[threading.Event]:
    """Two pieces of heavy work outside any page run (a training run, a corpus run) hold both
    places of the heavy queue for the block (`hold_s` at most); the event it yields is set when
    the block ends, so work that waits on it ends with them."""
    free = threading.Event()
    admitted = threading.Barrier(gate.HEAVY_SLOTS + 1)

    def job(i: int) -> None:
        with gate.heavy(f"job{i}", poll_s=0.01):
            admitted.wait(5)
            free.wait(hold_s)

    threads = [threading.Thread(target=job, args=(i,), daemon=True) for i in range(gate.HEAVY_SLOTS)]
    for th in threads:
        th.start()
    admitted.wait(5)
    try:
        yield free
    finally:
        free.set()
        for th in threads:
            th.join(10)


def test_runs_queued_for_heavy_work_leave_the_places_to_new_pages() -> None:
    runs = HeavyRuns()
    with heavy_slots_held() as free:
        for i, who in enumerate(REGULARS[: budget.MAX_UNDER_WAY]):
            budget.charge(who, 30.0)  # they have used the server: no newcomer's right of way
            runs.heavy(f"x{i}", who, free)
        _until(lambda: gate.heavy_queue().counts() == (2, budget.MAX_UNDER_WAY), "all four wait for heavy work")
        assert budget.PAGE_RUNS.counts() == (0, 0, 0)  # none of them holds a place
        runs.start("newcomer", NEWCOMER, poll=None)
        _until(lambda: runs.has("go newcomer"), "a new visitor's page goes at once")
        regular = REGULARS[budget.MAX_UNDER_WAY]
        budget.charge(regular, 5.0)
        runs.start("regular", regular)
        _until(lambda: runs.has("go regular"), "so does a returning visitor's")
        assert not any(runs.has(f"admitted x{i}") for i in range(budget.MAX_UNDER_WAY))
        runs.finish("newcomer", "regular")
    for i in range(budget.MAX_UNDER_WAY):
        _until(lambda: runs.has(f"back x{i}"), "each goes on with its page after its heavy work")  # noqa: B023
        assert runs.log.index(f"worked x{i}") < runs.log.index(f"back x{i}")
    runs.join()


def test_a_run_aside_does_not_pause_and_counts_for_nothing() -> None:
    """While it is aside a run is not under way: a checkpoint (its progress bar) neither pauses
    it for a newcomer nor puts it back among the page runs."""
    budget.charge(REGULARS[0], 30.0)
    inside, look, looked, leave = (threading.Event() for _ in range(4))
    seen: dict[str, object] = {}

    def body() -> None:
        with budget.page_turn(REGULARS[0], poll_s=0.01) as turn:
            with budget.aside():
                inside.set()
                look.wait(10)
                turn.checkpoint()
                seen["pauses"] = turn.pauses
                seen["counts"] = budget.PAGE_RUNS.counts()
                looked.set()
                leave.wait(10)
            seen["after"] = budget.PAGE_RUNS.counts()

    th = threading.Thread(target=body, daemon=True)
    th.start()
    assert inside.wait(10)
    runs = Runs()
    runs.start("newcomer", NEWCOMER)
    _until(lambda: runs.has("go newcomer"), "the newcomer goes")
    look.set()
    assert looked.wait(10)
    runs.join()
    leave.set()
    th.join(10)
    assert seen["pauses"] == 0
    assert seen["counts"] == (1, 0, 0)  # the newcomer's run only
    assert seen["after"] == (1, 0, 0)  # back among the page runs


def test_going_on_after_heavy_work_waits_for_max_pause_at_most(monkeypatch: pytest.MonkeyPatch) -> None:
    """The result cache (and Streamlit's) holds a key's lock while it computes: a run whose heavy
    work ran in that lock must not wait for the places of runs that wait for the lock."""
    monkeypatch.setattr(budget, "MAX_UNDER_WAY", 2)
    monkeypatch.setattr(budget, "MAX_PAUSE_S", 0.5)
    key_lock = threading.Lock()
    worked = threading.Event()
    log: list[tuple[str, float]] = []

    def first() -> None:
        with budget.page_turn(REGULARS[0], poll_s=0.01), key_lock:
            with budget.aside(), gate.heavy(REGULARS[0], poll_s=0.01):
                worked.wait(10)
            log.append(("first back", time.monotonic()))

    def waiter(who: str) -> None:
        with budget.page_turn(who, poll_s=0.01), key_lock:
            log.append((who, time.monotonic()))

    for who in REGULARS[:3]:
        budget.charge(who, 30.0)
    threads = [threading.Thread(target=first, daemon=True)]
    threads[0].start()
    _until(lambda: gate.heavy_queue().counts() == (1, 0), "the first run is in its heavy work")
    threads += [threading.Thread(target=waiter, args=(who,), daemon=True) for who in REGULARS[1:3]]
    for th in threads[1:]:
        th.start()
    _until(lambda: budget.PAGE_RUNS.counts()[0] == 2, "two runs under way, both waiting for the lock")
    started = time.monotonic()
    worked.set()
    for th in threads:
        th.join(10)
        assert not th.is_alive()
    names = [name for name, _ in log]
    assert names[0] == "first back" and set(names[1:]) == set(REGULARS[1:3])
    assert 0.4 <= log[0][1] - started < 5.0  # it waited as a pause does, then went on


def test_a_run_stopped_in_its_heavy_work_ends_without_waiting_again() -> None:
    budget.charge(REGULARS[0], 30.0)

    class Stopped(Exception):
        pass

    with pytest.raises(Stopped), budget.page_turn(REGULARS[0], poll_s=0.01), budget.aside():
        raise Stopped
    assert budget.PAGE_RUNS.counts() == (0, 0, 0) and not budget.PAGE_RUNS.aside
    with budget.aside():  # outside a page run: nothing to step out of
        assert budget.PAGE_RUNS.counts() == (0, 0, 0)


def test_a_visitors_runs_in_heavy_work_still_count_as_their_tabs() -> None:
    """Aside frees a place for everyone else, not for the same visitor's next tab: ten tabs of one
    visitor on Explain would otherwise each hold a 512-token analysis while their explanations
    wait in the heavy queue. Two of theirs aside, their third run waits; another visitor's goes."""
    runs = HeavyRuns()
    with heavy_slots_held() as free:
        budget.charge(REGULARS[0], 30.0)
        runs.heavy("x0", REGULARS[0], free)
        runs.heavy("x1", REGULARS[0], free)
        _until(lambda: len(budget.PAGE_RUNS.aside) == 2, "both of the visitor's runs wait for heavy work")
        assert budget.PAGE_RUNS.of(REGULARS[0]) == 2
        runs.start("third", REGULARS[0])
        _until(lambda: budget.PAGE_RUNS.counts() == (0, 0, 1), "their third tab waits to start")
        budget.charge(REGULARS[1], 5.0)
        runs.start("other", REGULARS[1])
        _until(lambda: runs.has("go other"), "another visitor's page goes")
        assert not runs.has("go third")
        runs.finish("other")
    _until(lambda: runs.has("go third"), "their third tab goes once a run of theirs is back and over")
    runs.join()


def test_runs_in_heavy_work_count_for_the_memory_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run aside still holds its results: with two aside and the server one run's headroom from
    its budget, a visitor who has used the server waits (as beside two runs under way), while a
    newcomer's first page, under the budget itself, goes at once."""
    gate.configure(memory_mb=1500)
    monkeypatch.setattr(gate, "rss_mb", lambda: 1500.0 - budget.RUN_HEADROOM_MB + 50.0)
    runs = HeavyRuns()
    with heavy_slots_held() as free:
        for i in range(2):
            budget.charge(REGULARS[i], 30.0)
            runs.heavy(f"x{i}", REGULARS[i], free)
        _until(lambda: len(budget.PAGE_RUNS.aside) == 2, "two runs wait for heavy work")
        budget.charge(REGULARS[2], 5.0)
        runs.start("regular", REGULARS[2])
        _until(lambda: budget.PAGE_RUNS.counts() == (0, 0, 1), "the regular visitor waits")
        runs.start("newcomer", NEWCOMER)
        _until(lambda: runs.has("go newcomer"), "the newcomer goes")
        assert not runs.has("go regular")
        runs.finish("newcomer")
    _until(lambda: runs.has("go regular"), "the regular goes once the heavy work is over")
    runs.join()
