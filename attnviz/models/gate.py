"""How many forward passes run at once, and which go first.

A public demo shares two CPU cores among every visitor. Interactive passes (a visitor's new
sentence) are short; explanations (occlusion, integrated gradients, value zeroing, head
importance) are many passes in a row. Three rules keep one visitor from stalling the rest:

- at most `INTERACTIVE_SLOTS` interactive passes per model at once (a predictable memory peak);
- explanation work goes through one process-wide lane, one batch at a time, and a batch waits
  while any interactive pass is running or waiting (interactive passes go first);
- between batches an explanation calls its `progress` callback, where the app shows progress,
  charges the visitor's budget and lets the visitor cancel.

The gates live in module state keyed by model, not in a Streamlit cache: a cleared cache
(any client can send `clear_cache`) costs a model reload, never a broken limit.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator

__all__ = [
    "INTERACTIVE_SLOTS",
    "Cancelled",
    "ForwardGate",
    "Progress",
    "background_lane",
    "gate_for",
    "interactive_waiting",
]

INTERACTIVE_SLOTS = 2
MAX_GATES = 64  # distinct (model, device) keys remembered; beyond that the oldest idle one goes
YIELD_WAIT_S = 0.05  # how often a waiting explanation batch looks again

Progress = Callable[[float], None]  # called with the fraction done, between batches


class Cancelled(RuntimeError):
    """An explanation stopped between two batches (its progress callback said so)."""


class _Activity:
    """Counts interactive passes running or waiting anywhere in the process."""

    def __init__(self) -> None:
        self._count = 0
        self._cond = threading.Condition()

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        with self._cond:
            self._count += 1
        try:
            yield
        finally:
            with self._cond:
                self._count -= 1
                self._cond.notify_all()

    def wait_until_idle(self, timeout: float | None = None) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._count == 0, timeout)

    @property
    def count(self) -> int:
        return self._count


_ACTIVITY = _Activity()
_BACKGROUND = threading.Lock()  # one explanation batch at a time, process-wide


class ForwardGate:
    """The forward-pass bound of one model: `interactive()` around a visitor's pass,
    `background()` around each batch of an explanation."""

    def __init__(self, slots: int = INTERACTIVE_SLOTS):
        self.slots = slots
        self._semaphore = threading.BoundedSemaphore(slots)

    @contextlib.contextmanager
    def interactive(self) -> Iterator[None]:
        with _ACTIVITY.active(), self._semaphore:
            yield

    @contextlib.contextmanager
    def background(self) -> Iterator[None]:
        with background_lane():
            yield


@contextlib.contextmanager
def background_lane() -> Iterator[None]:
    """One explanation batch: waits for the process-wide lane, then for interactive passes to
    finish, and holds the lane while the batch runs."""
    with _BACKGROUND:
        while not _ACTIVITY.wait_until_idle(YIELD_WAIT_S):
            pass
        yield


def interactive_waiting() -> int:
    """Interactive passes running or waiting now (tests and the load test read it)."""
    return _ACTIVITY.count


_GATES: OrderedDict[Hashable, ForwardGate] = OrderedDict()
_GATES_LOCK = threading.Lock()


def gate_for(key: Hashable) -> ForwardGate:
    """The gate of one model (key: name and device), the same object for the life of the
    process whatever cache holds the model."""
    with _GATES_LOCK:
        gate = _GATES.get(key)
        if gate is None:
            gate = _GATES[key] = ForwardGate()
            while len(_GATES) > MAX_GATES:
                _GATES.popitem(last=False)
        else:
            _GATES.move_to_end(key)
        return gate
