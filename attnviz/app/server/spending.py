"""Who is spending what, for every session of one server process: visitors' recent model time
(charged by attnviz/models/gate.py, which puts the least-spent visitor first in every queue), page
time, what their page runs cost in CPU, and which visitor each session belongs to (visitor.py).
Every table is bounded module state (never st.cache_*, which any client can clear).
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections import OrderedDict, deque
from typing import TypeVar

from ...models import gate

BUDGET_WINDOW_S = 600.0
MAX_VISITORS = 2000  # visitors whose spending is remembered; the oldest go first
MAX_SESSIONS = 4000  # session -> visitor entries remembered

_SPENT: OrderedDict[str, deque[tuple[float, float]]] = OrderedDict()  # visitor -> (when, seconds)
_SESSIONS: OrderedDict[str, str] = OrderedDict()  # session id -> visitor
_LOCK = threading.Lock()
_PAGE_SPENT: OrderedDict[str, deque[tuple[float, float]]] = OrderedDict()  # visitor -> page seconds
K = TypeVar("K")
V = TypeVar("V")


def newest(table: OrderedDict[K, V], key: K, value: V, most: int) -> None:
    """`value` becomes `table`'s newest entry, at `key`; the oldest beyond `most` entries go."""
    table[key] = value
    table.move_to_end(key)
    while len(table) > most:
        table.popitem(last=False)


def bind(session: str, visitor: str) -> None:
    """Session `session` belongs to `visitor` from now on."""
    with _LOCK:
        newest(_SESSIONS, session, visitor, MAX_SESSIONS)


def visitor_of(session: str) -> str:
    """The visitor of a session; a session not (yet) told apart is its own visitor."""
    with _LOCK:
        return _SESSIONS.get(session) or f"s:{session}"


def _spent(visitor: str, now: float, table: OrderedDict[str, deque[tuple[float, float]]] = _SPENT) -> float:
    entries = table.get(visitor)
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


def charge(visitor: str, seconds: float, table: OrderedDict[str, deque[tuple[float, float]]] = _SPENT) -> None:
    """`seconds` of model time spent for `visitor` (the gate's hook), or of page time (`_PAGE_SPENT`)."""
    if seconds <= 0:
        return
    now = time.monotonic()
    with _LOCK:
        entries = table.get(visitor) or deque(maxlen=int(BUDGET_WINDOW_S))
        if entries and now - entries[-1][0] < 1.0:  # one entry a second: a flood of passes stays small
            entries[-1] = (entries[-1][0], entries[-1][1] + seconds)
        else:
            entries.append((now, seconds))
        newest(table, visitor, entries, MAX_VISITORS)


def clear() -> None:
    """Forget all spending and sessions (tests)."""
    with _LOCK:
        _SPENT.clear()
        _PAGE_SPENT.clear()
        _SESSIONS.clear()
        _RUN_CPU.clear()


# What a run will cost is what its visitor's last runs cost: the lower median of the CPU seconds
# of their last RECENT_RUNS' own threads (a pause or a wait costs none), so a page's first run
# (every widget built) does not make the next sentence heavy, and two long texts in a row do. A
# visitor with no measured run counts as heavy (a cookie-less flooder's tabs are all unmeasured);
# what a cheap run buys is in budget.py (`_View.light`).
CHEAP_RUN_S = 0.25
CPU_HORIZON_S = 0.5
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
RECENT_RUNS = 3
_RUN_CPU: OrderedDict[str, deque[float]] = OrderedDict()  # visitor -> their last runs' CPU seconds


def expected_cpu(visitor: str) -> float | None:
    """The CPU seconds `visitor`'s next page run is expected to take (None: never measured)."""
    with _LOCK:
        runs = _RUN_CPU.get(visitor)
        return statistics.median_low(runs) if runs else None


def _ran(visitor: str, cpu_s: float) -> None:
    with _LOCK:
        runs = _RUN_CPU.get(visitor) or deque(maxlen=RECENT_RUNS)
        runs.append(cpu_s)
        newest(_RUN_CPU, visitor, runs, MAX_VISITORS)


gate.configure(priority=spent, charge=charge)
