"""Work that must stop when its session has gone: a watchdog over Streamlit's live sessions.

A background job registers a stop callback for its session (`watch`). One daemon thread looks
every CHECK_S at the sessions Streamlit still has; one absent for GRACE_S (a reconnecting tab
comes back with the same id) has gone, and its callbacks run. The thread ends when nothing is
watched. Explanations in a page need none: Streamlit stops a closed session's script run.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable

from ..streamlit_adapter import session_alive

LOG = logging.getLogger("attnviz")
CHECK_S = 0.5
GRACE_S = 3.0  # a websocket that drops and comes back within this keeps its jobs
MAX_WATCHED = 4096


_ALIVE: list[Callable[[str], bool]] = [session_alive]
_WATCHED: dict[str, dict[str, Callable[[], None]]] = {}  # session -> {what: stop}
_MISSING: dict[str, float] = {}  # session -> when it was first seen gone
_COND = threading.Condition()
_THREAD: list[threading.Thread] = []


def set_alive(check: Callable[[str], bool]) -> Callable[[str], bool]:
    """Replace how liveness is read (tests); returns the previous check."""
    old, _ALIVE[0] = _ALIVE[0], check
    return old


def alive(session: str) -> bool:
    try:
        return bool(_ALIVE[0](session))
    except Exception:  # never stop a visitor's work on a failed look
        return True


def watch(session: str, what: str, stop: Callable[[], None]) -> None:
    """Call `stop()` once `session` has gone (replacing an earlier `what` of the session)."""
    with _COND:
        if session not in _WATCHED and len(_WATCHED) >= MAX_WATCHED:
            return
        _WATCHED.setdefault(session, {})[what] = stop
        if not _THREAD or not _THREAD[0].is_alive():
            _THREAD[:] = [threading.Thread(target=_loop, name="attnviz-sessions", daemon=True)]
            _THREAD[0].start()
        _COND.notify_all()


def unwatch(session: str, what: str) -> None:
    with _COND:
        stops = _WATCHED.get(session)
        if stops is not None:
            stops.pop(what, None)
            if not stops:
                _WATCHED.pop(session, None)
                _MISSING.pop(session, None)


def clear() -> None:
    """Forget every watch (tests: sessions of an AppTest never close, so their watches would
    keep the thread alive into the next test); the thread then ends at its next look."""
    with _COND:
        _WATCHED.clear()
        _MISSING.clear()
        _COND.notify_all()


def watched() -> int:
    with _COND:
        return sum(len(v) for v in _WATCHED.values())


def _gone_now() -> list[Callable[[], None]]:
    now = time.monotonic()
    with _COND:
        sessions = list(_WATCHED)
    gone = [s for s in sessions if not alive(s)]
    stops: list[Callable[[], None]] = []
    with _COND:
        for session in sessions:
            if session not in gone:
                _MISSING.pop(session, None)
            elif now - _MISSING.setdefault(session, now) >= GRACE_S:
                stops += _WATCHED.pop(session, {}).values()
                _MISSING.pop(session, None)
    return stops


def _loop() -> None:
    while True:
        with _COND:
            if not _WATCHED:
                _THREAD.clear()
                return
            _COND.wait(CHECK_S)
        for stop in _gone_now():
            with contextlib.suppress(Exception):
                stop()
