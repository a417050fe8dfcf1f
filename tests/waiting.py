"""Waiting on a state other threads reach, with a deadline (no sleep-then-assert)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


def until(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Return once `check()` is true; fail naming `what` after `timeout` seconds."""
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for: {what}"
        pause.wait(0.005)
