"""Who is spending what: model time per visitor, for every session of one server process.

No Streamlit here (the display is app/work.py): a table of visitors' recent model time (every
interactive pass and every batch of heavy work, charged by attnviz/models/gate.py), and which
visitor each websocket session belongs to (app/visitor.py tells them apart: a cookie, or the
client address behind a proxy). The gate asks `spent(visitor)` to put the least-spent visitor
first in every queue: a visitor past their share waits behind the others rather than hitting a
wall. Both tables are bounded module state (never st.cache_*, which any client can clear).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator

from ..models import gate

__all__ = [
    "BUDGET_WINDOW_S",
    "MAX_SESSIONS",
    "MAX_VISITORS",
    "PER_VISITOR_RUNS",
    "bind",
    "charge",
    "clear",
    "left",
    "page_turn",
    "spent",
    "visitor_of",
]

BUDGET_WINDOW_S = 600.0
MAX_VISITORS = 2000  # visitors whose spending is remembered; the oldest go first
MAX_SESSIONS = 4000  # session -> visitor entries remembered

_SPENT: OrderedDict[str, deque[tuple[float, float]]] = OrderedDict()  # visitor -> (when, seconds)
_SESSIONS: OrderedDict[str, str] = OrderedDict()  # session id -> visitor
_LOCK = threading.Lock()


def bind(session: str, visitor: str) -> None:
    """Session `session` belongs to `visitor` from now on."""
    with _LOCK:
        _SESSIONS[session] = visitor
        _SESSIONS.move_to_end(session)
        while len(_SESSIONS) > MAX_SESSIONS:
            _SESSIONS.popitem(last=False)


def visitor_of(session: str) -> str:
    """The visitor of a session; a session not (yet) told apart is its own visitor."""
    with _LOCK:
        return _SESSIONS.get(session) or f"s:{session}"


def _spent(visitor: str, now: float) -> float:
    entries = _SPENT.get(visitor)
    if entries is None:
        return 0.0
    while entries and now - entries[0][0] > BUDGET_WINDOW_S:
        entries.popleft()
    return sum(s for _, s in entries)


def spent(visitor: str) -> float:
    """Seconds of model time `visitor` spent in the current window."""
    with _LOCK:
        return _spent(visitor, time.monotonic())


def left(budget_s: float, visitor: str) -> float:
    return max(0.0, budget_s - spent(visitor))


def charge(visitor: str, seconds: float) -> None:
    if seconds <= 0:
        return
    now = time.monotonic()
    with _LOCK:
        entries = _SPENT.get(visitor)
        if entries is None:
            entries = _SPENT[visitor] = deque()
        if entries and now - entries[-1][0] < 1.0:  # one entry a second: a flood of passes stays small
            entries[-1] = (entries[-1][0], entries[-1][1] + seconds)
        else:
            entries.append((now, seconds))
        while len(entries) > BUDGET_WINDOW_S:
            entries.popleft()
        _SPENT.move_to_end(visitor)
        while len(_SPENT) > MAX_VISITORS:
            _SPENT.popitem(last=False)


def clear() -> None:
    """Forget all spending and sessions (tests)."""
    with _LOCK:
        _SPENT.clear()
        _SESSIONS.clear()


gate.configure(priority=spent, charge=charge)


PER_VISITOR_RUNS = 2  # page runs of one visitor at once, all their tabs together
_RUNS: dict[str, int] = {}
_RUNS_COND = threading.Condition()


@contextlib.contextmanager
def page_turn(visitor: str, wait: Callable[[], None] | None = None, poll_s: float = 0.25) -> Iterator[None]:
    """One page run of `visitor`: at most PER_VISITOR_RUNS at once, so ten tabs of one visitor
    draw two at a time while other visitors' runs go on. `wait()` is called every `poll_s` while
    it waits (the app shows a line there; a newer rerun of the tab stops the wait)."""
    with _RUNS_COND:
        while _RUNS.get(visitor, 0) >= PER_VISITOR_RUNS:
            _RUNS_COND.release()
            try:
                if wait is not None:
                    wait()
            finally:
                _RUNS_COND.acquire()
            _RUNS_COND.wait(poll_s)
        _RUNS[visitor] = _RUNS.get(visitor, 0) + 1
    try:
        yield
    finally:
        with _RUNS_COND:
            _RUNS[visitor] -= 1
            if _RUNS[visitor] <= 0:
                del _RUNS[visitor]
            _RUNS_COND.notify_all()
