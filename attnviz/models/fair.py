"""The one fair queue: whoever has spent least goes first, equal spenders in arrival order.

Every wait of the server is one of these: a model's interactive slots, the background lane and
the heavy-work admission (training and corpus runs wait there too) in gate.py, the page runs in
app/server/budget.py. `spent(visitor)` says what a visitor has cost so far (seconds of model time
in their window), read afresh each time the order is taken, so a visitor who spends while they
wait falls back behind the others; `place` is what the waiting visitor is shown.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

# the next arrival number, process-wide: between equal spenders the smaller goes first
arrival = itertools.count().__next__


class Waiter(Protocol):
    @property
    def visitor(self) -> str: ...

    @property
    def seq(self) -> int: ...


W = TypeVar("W", bound=Waiter)


class FairQueue(Generic[W]):
    """`waiting` in turn order (`order()`); `cond` guards them and wakes whoever waits on it."""

    def __init__(self, spent: Callable[[str], float]) -> None:
        self.spent = spent
        self.waiting: list[W] = []
        self.cond = threading.Condition()

    def order(self) -> list[W]:
        """Under cond: the waiting, least-spent visitor first, then arrival."""
        spent = {visitor: self.spent(visitor) for visitor in {w.visitor for w in self.waiting}}
        return sorted(self.waiting, key=lambda w: (spent[w.visitor], w.seq))

    def first(self) -> W | None:
        """Under cond: whose turn it is."""
        return next(iter(self.order()), None)

    def place(self, waiter: W) -> int:
        """1 for the next to go, 0 when not waiting."""
        with self.cond:
            return next((i for i, w in enumerate(self.order(), 1) if w is waiter), 0)

    def others_waiting(self, visitor: str) -> bool:
        with self.cond:
            return any(w.visitor != visitor for w in self.waiting)
