"""Page runs, server-wide: who goes, who waits, who pauses (`page_turn`, `aside`), ordered by what
each visitor has spent (app/server/spending.py). No Streamlit here (the display is app/work.py):
a visitor past their share waits behind the others rather than hitting a wall.
"""

from __future__ import annotations

import contextlib
import contextvars
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ...models import fair, gate
from .spending import (  # the tables the page runs are ordered by, re-exported: one import for both
    _LOCK,
    _PAGE_SPENT,
    BUDGET_WINDOW_S,
    CHEAP_RUN_S,
    CORES,
    CPU_HORIZON_S,
    MAX_SESSIONS,
    MAX_VISITORS,
    _ran,
    _spent,
    bind,
    charge,
    clear,
    expected_cpu,
    left,
    spent,
    visitor_of,
)

__all__ = [
    "BUDGET_WINDOW_S",
    "MAX_SESSIONS",
    "MAX_UNDER_WAY",
    "MAX_VISITORS",
    "PAGE_RUNS",
    "PAGE_SLOTS",
    "PER_VISITOR_RUNS",
    "PageRun",
    "Turn",
    "aside",
    "bind",
    "charge",
    "clear",
    "left",
    "page_turn",
    "spent",
    "visitor_of",
]


PER_VISITOR_RUNS = 2  # page runs of one visitor under way at once, all their tabs together
PAGE_SLOTS = 2  # heavy page runs going forward at once, server-wide (a paused one holds none)
YIELD_MARGIN_S = 2.0  # a heavy run gives way to a visitor who has cost the server this much less
NEWCOMER_S = 2.0  # a visitor who has cost the server less than this goes at once, whatever the slots
CHECK_EVERY_S = 0.25  # while nothing else changes, a going run asks whether to pause this often
MAX_PAUSE_S = 15.0  # a paused run goes on after this long whatever waits (nothing can hold it for good)
MAX_UNDER_WAY = 4  # heavy page runs under way at once (going or paused: each holds its results in
# memory), server-wide, newcomers included, so cookie-less tabs that all look new cannot start a
# 512-token run each; near the memory budget, fewer (`_PageRuns._may_start`)


@dataclass(eq=False)
class PageRun:
    """One page run: waiting, going (holding one of the PAGE_SLOTS), or paused at a checkpoint."""

    visitor: str
    seq: int = field(default_factory=fair.arrival)
    going: bool = False
    under_way: bool = False  # from its first start to its end: one of the visitor's PER_VISITOR_RUNS
    since: float = 0.0  # when it last went on
    gone_s: float = 0.0  # seconds it went on before its last pause
    cpu_s: float | None = None  # what it is expected to cost (expected_cpu), None: unknown, heavy

    @property
    def cheap(self) -> bool:
        return self.cpu_s is not None and self.cpu_s <= CHEAP_RUN_S


RUN_HEADROOM_MB = 250.0  # what one more page run may add at its peak: a 512-token MiniLM explorer
# run holds its attention (75 MB), the figures made from it and the cache's copy


def _memory() -> tuple[bool, bool]:
    """(past the server's memory budget, one more page run could take it past), from one reading
    of the server's memory; no budget set: (False, False)."""
    budget = gate.memory_budget_mb()
    if budget <= 0:
        return False, False
    rss = gate.rss_mb()
    return rss > budget, rss + RUN_HEADROOM_MB > budget


HOG_FACTOR = 4.0  # a visitor who has cost this many times the middle visitor's cost (the median of
# those with a run waiting or under way) loses the light line: a flood's 128-token runs are cheap
# in CPU (0.18 s) but its visitor's cost stands far above a class's


@dataclass
class _View:
    """One decision's reading: each visitor's cost, and above what cost a visitor is a hog."""

    costs: dict[str, float]
    hog_above: float

    def light(self, run: PageRun) -> bool:
        """A cheap run of a visitor who is no hog: no heavy slot, no MAX_UNDER_WAY, no pause."""
        return run.cheap and self.costs.get(run.visitor, 0.0) <= self.hog_above


class _PageRuns(fair.FairQueue[PageRun]):
    """Page runs, server-wide. A newcomer's run (a visitor who has cost under NEWCOMER_S) goes at
    once; a light run (`_View.light`) while the CPU has room (`_room`); else at most PAGE_SLOTS
    heavy runs go at once; PER_VISITOR_RUNS of one visitor are under way at most; the waiting go
    least-cost visitor first, then in arrival order; a heavy run does not go on (it waits, or
    pauses at its next checkpoint) while a visitor who has cost YIELD_MARGIN_S less waits or goes.
    The cost: the visitor's model time, their page runs' wall time, and the time their runs under
    way have gone so far."""

    def __init__(self) -> None:
        super().__init__(lambda visitor: self.cost(visitor, time.monotonic()))
        self.under_way: list[PageRun] = []
        self.version = 0  # counts the changes a going run's question to pause depends on
        self.aside: list[PageRun] = []  # in their heavy work (`aside`): no place, no slot, but their
        # results are still in memory and they are still their visitor's tabs

    def cost(self, visitor: str, now: float) -> float:
        return self._view(now, [visitor]).costs[visitor]

    def _view(self, now: float, more: list[str] | None = None) -> _View:
        """Every visitor with a run waiting, under way or aside, and what each has cost, in one
        pass (a decision reads it once: a hall of 120 waiting runs, each deciding on every wake-up,
        made the scheduler itself the server's busiest thread)."""
        going: dict[str, float] = {}
        for r in self.under_way:
            going[r.visitor] = going.get(r.visitor, 0.0) + r.gone_s + (now - r.since if r.going else 0.0)
        visitors = {r.visitor for r in [*self.waiting, *self.aside]} | set(going) | set(more or ())
        with _LOCK:
            costs = {v: _spent(v, now) + _spent(v, now, _PAGE_SPENT) + going.get(v, 0.0) for v in visitors}
        middle = statistics.median(costs.values()) if costs else 0.0
        return _View(costs, max(HOG_FACTOR * middle, NEWCOMER_S + YIELD_MARGIN_S))

    def _may_start(self, view: _View) -> Callable[[PageRun], bool]:
        """Whether a run may start now: a heavy one within MAX_UNDER_WAY heavy runs; past
        PAGE_SLOTS under way or aside (a run in its heavy work still holds its results), a light
        run or a newcomer's only under the memory budget, anyone else's only if one more run's
        headroom fits under it (a flood's third run waits, a new visitor's first pages do not)."""
        heavy_full = sum(not view.light(r) for r in self.under_way) >= MAX_UNDER_WAY
        if len(self.under_way) + len(self.aside) < PAGE_SLOTS:
            return lambda run: view.light(run) or not heavy_full
        over, no_room = _memory()

        def may(run: PageRun) -> bool:
            if view.light(run):
                return not over
            return not heavy_full and not (over if view.costs[run.visitor] < NEWCOMER_S else no_room)

        return may

    def _eligible(self, view: _View) -> list[PageRun]:
        n = Counter(r.visitor for r in [*self.under_way, *self.aside])
        may_start = self._may_start(view)
        return [r for r in self.waiting if r.under_way or (n[r.visitor] < PER_VISITOR_RUNS and may_start(r))]

    def _room(self, run: PageRun, view: _View) -> bool:
        """Whether `run` may go beside the runs going now: a light one while what the light runs
        going are expected to cost, with it, fits in CPU_HORIZON_S of the cores (or fewer than
        PAGE_SLOTS go); a heavy one while fewer than PAGE_SLOTS heavy runs go: the two never wait
        for each other's cap."""
        going = [r for r in self.under_way if r.going]
        if view.light(run):  # beside at most PAGE_SLOTS heavy runs, each at most one core (one thread)
            expected = sum(r.cpu_s or 0.0 for r in going if view.light(r)) + (run.cpu_s or 0.0)
            return len(going) < PAGE_SLOTS or expected <= CORES * CPU_HORIZON_S
        return sum(not view.light(r) for r in going) < PAGE_SLOTS

    def _outranked(self, run: PageRun, eligible: list[PageRun], view: _View) -> bool:
        """A heavy run gives way to a visitor who has cost the server less than half as much, and
        YIELD_MARGIN_S less, and whose run waits or goes: a flood gives way to a class, students who
        spent alike never hold each other up; a light run gives and takes no way."""
        if view.light(run):
            return False
        mine = view.costs[run.visitor]
        others = {r.visitor for r in [*eligible, *self.under_way] if r.going or r in eligible} - {run.visitor}
        return any(view.costs[v] + YIELD_MARGIN_S < mine and 2 * view.costs[v] < mine for v in others)

    def _may_go(self, run: PageRun) -> bool:
        """Newcomers at once (eight first visits to a cold server all draw their frames); the
        others in their turn, light and heavy runs each in their own line."""
        view = self._view(time.monotonic())
        eligible = self._eligible(view)
        if run not in eligible:
            return False
        if view.costs[run.visitor] < NEWCOMER_S:  # in arrival order among the visitor's own runs
            return min((r for r in eligible if r.visitor == run.visitor), key=lambda r: r.seq) is run
        if not self._room(run, view) or self._outranked(run, eligible, view):
            return False
        line = [r for r in eligible if view.light(r) == view.light(run)]
        return min(line, key=lambda r: (view.costs[r.visitor], r.seq)) is run

    def wait(self, run: PageRun, poll: Callable[[], None] | None, poll_s: float, at_most: float | None = None) -> None:
        """Until `run` may go on (or `at_most` seconds passed); `poll()` every `poll_s` while it
        waits (it may raise to give up)."""
        until = None if at_most is None else time.monotonic() + at_most
        with self.cond:
            self.waiting.append(run)
            self.version += 1  # a newcomer waiting may make a going run pause
            try:
                while not self._may_go(run) and (until is None or time.monotonic() < until):
                    if poll is not None:
                        self.cond.release()
                        try:
                            poll()
                        finally:
                            self.cond.acquire()
                    self.cond.wait(poll_s)
            finally:
                self.waiting.remove(run)
            if not run.under_way:
                run.under_way = True
                self.under_way.append(run)
            run.going, run.since = True, time.monotonic()
            self._changed()

    def _changed(self) -> None:
        """Under cond: a run came, went on, paused or ended."""
        self.version += 1
        self.cond.notify_all()

    def should_pause(self, run: PageRun) -> bool:
        with self.cond:
            view = self._view(time.monotonic())
            return self._outranked(run, self._eligible(view), view)

    def pause(self, run: PageRun) -> None:
        with self.cond:
            if run.going:
                run.going = False
                run.gone_s += time.monotonic() - run.since
                self._changed()

    def end(self, run: PageRun) -> float:
        """The run is over: the seconds it went on. Past the memory budget, the server gives back
        (server/registry.py `relieve`: cached results, then the least recently used models) before
        the next run starts, outside the lock every run waits on (a gc and cache clears are slow)."""
        self.pause(run)
        budget = gate.memory_budget_mb()
        if budget > 0 and gate.rss_mb() > budget:
            from . import registry  # torch comes with it: a server past its budget has loaded models

            registry.relieve(budget, gate.rss_mb)
        with self.cond:
            if run.under_way:
                run.under_way = False
                self.under_way.remove(run)
            self._changed()
        return run.gone_s

    def step_aside(self, run: PageRun) -> None:
        """The run leaves the page runs for a while (its heavy work, which has its own queue):
        it holds no slot and no place among MAX_UNDER_WAY until it waits its turn again, but
        still counts for the memory check and for its visitor's PER_VISITOR_RUNS."""
        with self.cond:  # one step: no run starts in between on a count without it
            self.end(run)
            self.aside.append(run)

    def step_back(self, run: PageRun) -> None:
        """The run's heavy work is over (done, cancelled or stopped)."""
        with self.cond:
            if run in self.aside:
                self.aside.remove(run)
            self._changed()

    def of(self, visitor: str) -> int:
        """Runs of `visitor` under way now, in their heavy work included."""
        with self.cond:
            return sum(r.visitor == visitor for r in [*self.under_way, *self.aside])

    def counts(self) -> tuple[int, int, int]:
        """(going, paused, waiting to start) now (tests; `len(aside)`: those in heavy work)."""
        with self.cond:
            going = sum(r.going for r in self.under_way)
            return going, len(self.under_way) - going, sum(not r.under_way for r in self.waiting)


PAGE_RUNS = _PageRuns()


class Turn:
    """A page run holding its turn: `checkpoint()` between two of its steps (app/server/visitor.py
    calls it each time the run sends something to the browser) pauses the run while a visitor
    who has cost the server less is waiting or going, and goes on after them."""

    def __init__(self, run: PageRun, poll_s: float) -> None:
        self.run, self.poll_s, self.pauses = run, poll_s, 0
        self.aside = False  # in heavy work (`aside`): out of the page runs, nothing to pause
        self.asked = (-1, 0.0)  # the page runs' version and the time when it last asked whether to pause

    def checkpoint(self, poll: Callable[[], None] | None = None) -> None:
        """Never while this thread holds a model pass's slot or the background lane (the run
        that goes first may need them), nor while it is aside in heavy work; never for longer
        than MAX_PAUSE_S. Asked again only once a run has come, gone or paused since, or after
        CHECK_EVERY_S (costs grow as runs go): a page run sends about a hundred messages in a
        burst, and each question takes the lock every run waits on."""
        now, version = time.monotonic(), PAGE_RUNS.version
        if self.aside or (version, now) < (self.asked[0], self.asked[1] + CHECK_EVERY_S) or gate.holding_a_pass():
            return
        self.asked = (version, now)
        if not PAGE_RUNS.should_pause(self.run):
            return
        self.pauses += 1
        PAGE_RUNS.pause(self.run)
        PAGE_RUNS.wait(self.run, poll, self.poll_s, MAX_PAUSE_S)


@contextlib.contextmanager
def page_turn(visitor: str, wait: Callable[[], None] | None = None, poll_s: float = 0.25) -> Iterator[Turn]:
    """One page run of `visitor`: it waits its turn (`wait()` is called every `poll_s` while it
    waits: the app shows a line there, and a newer rerun of the tab stops the wait), goes, and
    the seconds it went on are charged to the visitor's page time, and its cost kept as what their
    next runs are expected to cost: its thread's CPU seconds plus the model time charged meanwhile
    (a forward's torch threads are not this thread: a 512-token MiniLM page is 0.18 CPU-s of its
    own thread and a 75 MB result)."""
    run = PageRun(visitor, cpu_s=expected_cpu(visitor))
    token: contextvars.Token[Turn | None] | None = None
    started: tuple[float, float] | None = None
    try:
        PAGE_RUNS.wait(run, wait, poll_s)
        started = (time.thread_time(), spent(visitor))
        held = Turn(run, poll_s)
        token = _TURN.set(held)
        yield held
    finally:
        if token is not None:
            _TURN.reset(token)
        if started is not None:
            _ran(visitor, time.thread_time() - started[0] + max(0.0, spent(visitor) - started[1]))
        charge(visitor, PAGE_RUNS.end(run), _PAGE_SPENT)


_TURN: contextvars.ContextVar[Turn | None] = contextvars.ContextVar("attnviz_page_turn", default=None)


@contextlib.contextmanager
def aside(poll: Callable[[], None] | None = None) -> Iterator[None]:
    """Heavy work inside this thread's page run (an explanation, a model build): the run steps
    out of the page runs while the work waits in its own queue (gate.heavy) and goes, so queued
    heavy work never holds the MAX_UNDER_WAY runs a new visitor's first page needs. After it the
    run waits its turn again (`poll()` every poll_s, where a rerun request may stop it) for
    MAX_PAUSE_S at most: the work may have run inside a cache's lock that runs under way wait for.
    Nested or outside a page run: nothing. A run whose heavy work raised is back at once."""
    held = _TURN.get()
    if held is None or held.aside:
        yield
        return
    PAGE_RUNS.step_aside(held.run)
    held.aside = True
    try:
        yield
    except BaseException:
        _back(held, None, 0.0)  # at once: the page goes on to show what failed, or page_turn ends it
        raise
    _back(held, poll, MAX_PAUSE_S)


def _back(held: Turn, poll: Callable[[], None] | None, at_most: float) -> None:
    """The run's heavy work is over: back among the page runs, under way and going, after a wait
    of at most `at_most` seconds (a run left out of them would be asked to pause for nothing)."""
    held.aside = False
    PAGE_RUNS.step_back(held.run)
    PAGE_RUNS.wait(held.run, poll, held.poll_s, at_most)
