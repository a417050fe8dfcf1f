"""Long explanations in the page: a progress bar, a Cancel button and a per-visitor budget.

The explanation methods call `progress(fraction)` between batches (attnviz/explain/_model.py).
Here that callback updates a progress bar; updating it is a Streamlit call, so when the
visitor clicks Cancel (or anything else) Streamlit stops the run right there, between two
batches, and the work ends. It also charges the visitor's budget: seconds of explanation work
per BUDGET_WINDOW_S, kept per session in a bounded table (module state, like the gates).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from typing import TypeVar

import streamlit as st

from ..models import Progress
from . import runners
from .state import Ctx, t

__all__ = ["BUDGET_WINDOW_S", "BudgetExceeded", "budget_left", "cached_long", "charge", "run_long"]

T = TypeVar("T")
BUDGET_WINDOW_S = 600.0
MAX_SESSIONS = 2000  # visitors whose spending is remembered; the oldest go first


class BudgetExceeded(RuntimeError):
    """A visitor's explanation work would go past their budget."""


_SPENT: OrderedDict[str, deque[tuple[float, float]]] = OrderedDict()  # session -> (when, seconds)
_LOCK = threading.Lock()


def session_key() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    run = get_script_run_ctx()
    return run.session_id if run is not None else "bare"


def _spent(session: str, now: float) -> float:
    entries = _SPENT.get(session)
    if entries is None:
        return 0.0
    while entries and now - entries[0][0] > BUDGET_WINDOW_S:
        entries.popleft()
    return sum(s for _, s in entries)


def budget_left(budget_s: float, session: str | None = None) -> float:
    """Seconds of explanation work this visitor may still start in the current window."""
    session = session or session_key()
    with _LOCK:
        return max(0.0, budget_s - _spent(session, time.monotonic()))


def charge(seconds: float, session: str | None = None) -> None:
    session = session or session_key()
    with _LOCK:
        entries = _SPENT.setdefault(session, deque(maxlen=256))
        entries.append((time.monotonic(), seconds))
        _SPENT.move_to_end(session)
        while len(_SPENT) > MAX_SESSIONS:
            _SPENT.popitem(last=False)


def _cancel(key: Hashable) -> None:
    st.session_state.setdefault("_cancelled", set()).add(key)


def _again(key: Hashable) -> None:
    st.session_state.setdefault("_cancelled", set()).discard(key)


def run_long(c: Ctx, key: Hashable, label: str, fn: Callable[[Progress], T]) -> T | None:
    """Run `fn(progress)` with a progress bar and a Cancel button, within the visitor's budget.
    None (with a message) when cancelled, over budget or not yet asked again after a cancel."""
    cancelled = st.session_state.setdefault("_cancelled", set())
    if key in cancelled:
        st.info(t("work.cancelled"), icon=":material/stop_circle:")
        st.button(t("work.again"), key=f"again_{abs(hash(key))}", on_click=_again, args=(key,))
        return None
    left = budget_left(c.settings.budget_s)
    if left <= 0:
        st.warning(t("work.budget", minutes=int(BUDGET_WINDOW_S // 60)), icon=":material/hourglass_top:")
        return None
    bar = st.progress(0.0, text=label)
    stop = st.empty()
    stop.button(t("work.cancel"), key=f"cancel_{abs(hash(key))}", on_click=_cancel, args=(key,))
    start = time.monotonic()

    def progress(fraction: float) -> None:
        if time.monotonic() - start > left:
            raise BudgetExceeded(label)
        bar.progress(min(max(float(fraction), 0.0), 1.0), text=label)  # a click stops the run here

    result: T | None = None
    try:
        result = fn(progress)
    except BudgetExceeded:
        st.warning(t("work.budget", minutes=int(BUDGET_WINDOW_S // 60)), icon=":material/hourglass_top:")
    finally:  # also when Streamlit stops the run (Cancel): the time spent still counts
        charge(time.monotonic() - start)
    bar.empty()
    stop.empty()
    return result


class _NotComputed(Exception):
    """Cancelled or over budget: nothing to keep in the result cache."""


def cached_long(
    c: Ctx, loaded: runners.Loaded, kind: str, text: str, *parts: Hashable, label: str, fn: Callable[[Progress], T]
) -> T | None:
    """`fn(progress)` through the result cache; on a miss it runs under `run_long`. None when
    it was cancelled or over budget (and then nothing is cached)."""

    def compute() -> T:
        value = run_long(c, (kind, loaded.key, text, *parts), label, fn)
        if value is None:
            raise _NotComputed
        return value

    try:
        return runners.cached(c, loaded, kind, text, *parts, fn=compute)
    except _NotComputed:
        return None
