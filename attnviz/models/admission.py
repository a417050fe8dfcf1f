"""Heavy work admitted as a whole, process-wide (gate.heavy): at most `slots` pieces at once, the
first always, more only while the process is under its memory budget; the rest wait in the fair
queue's order (fair.py).

Past the budget a queue only postpones, so while the process stays past it with work waiting,
the server first gives back what it can (the `relieve` hook), and if that is not enough, the
largest waiting piece of at least REFUSE_MIN_MB is refused (`OutOfMemory`), one every
REFUSE_EVERY_S. A piece's size is its caller's estimate (`size_mb`); work without one is never refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from . import fair
from .fair import FairQueue

REFUSE_EVERY_S = 5.0  # a refusal at most this often: registry.RELIEF_EVERY_S, time for a relief to show
# Smaller pieces wait: an explanation at the demo's 128 tokens holds 5 to 17 MB (MiniLM to SmolLM2,
# app/work.py attention_mb), a model build 90 to 540 MB, a long-mode result about 200 MB.
REFUSE_MIN_MB = 64.0


class OutOfMemory(RuntimeError):
    """Heavy work refused before it started: the server is past its memory budget after giving
    back what it could, and this was the largest piece waiting."""


@dataclass(eq=False)
class Ticket:
    """One piece of heavy work's place in the admission queue."""

    visitor: str
    size_mb: float  # its caller's estimate of the memory it takes (0: none given)
    queue: Admission = field(repr=False)
    seq: int = field(default_factory=fair.arrival)
    admitted: bool = False
    left: bool = False
    refused: bool = False  # refused for memory (`OutOfMemory`): it will not be admitted

    @property
    def place(self) -> int:
        """1 for the next to go in, 0 once admitted (or gone)."""
        return self.queue.place(self)


@dataclass(frozen=True)
class Memory:
    """The process's memory as the queue reads it: the budget (MB, 0: none), the resident MB now,
    and `relieve(budget)`, which gives back what it can and returns the resident MB after."""

    budget_mb: Callable[[], float]
    rss_mb: Callable[[], float]
    relieve: Callable[[float], float]

    def over(self) -> bool:
        budget = self.budget_mb()
        return budget > 0 and self.rss_mb() > budget


class Admission(FairQueue[Ticket]):
    """Heavy work as a whole: at most `slots` admitted, the first always, more only under the
    memory budget; past it after a relief, the largest waiting piece refused."""

    def __init__(self, priority: Callable[[str], float], memory: Memory, slots: int) -> None:
        super().__init__(priority)
        self.memory = memory
        self.slots = slots
        self.admitted: list[Ticket] = []
        self.refused_at = float("-inf")  # when a refusal was last considered (monotonic s)

    def _admit(self) -> None:
        """Under cond: let in whoever may go now."""
        for ticket in self.order():
            if len(self.admitted) >= self.slots or (self.admitted and self.memory.over()):
                break
            self.waiting.remove(ticket)
            self.admitted.append(ticket)
            ticket.admitted = True
            self.cond.notify_all()

    def enter(self, visitor: str, size_mb: float = 0.0) -> Ticket:
        ticket = Ticket(visitor, max(0.0, float(size_mb)), self)
        with self.cond:
            self.waiting.append(ticket)
            self._admit()
        return ticket

    def wait(self, ticket: Ticket, timeout: float) -> bool:
        """Whether `ticket` is admitted, waiting at most `timeout` s (memory is looked at again
        each time; `ticket.refused` says when it never will be)."""
        self._refuse_largest()
        with self.cond:
            self._admit()
            self.cond.wait_for(lambda: ticket.admitted or ticket.left, timeout)
            self._admit()
            return ticket.admitted

    def _refuse_largest(self) -> None:
        """Past the budget with work waiting: relieve, and if that was not enough, refuse the
        largest waiting piece of REFUSE_MIN_MB or more (the later arrival of two as large)."""
        if not self.waiting or not self.memory.over():
            return
        with self.cond:
            now = time.monotonic()
            if now - self.refused_at < REFUSE_EVERY_S:
                return
            self.refused_at = now
        budget = self.memory.budget_mb()
        if self.memory.relieve(budget) <= budget:  # outside cond: a relief takes the registry's lock
            return
        with self.cond:
            sized = [t for t in self.waiting if t.size_mb >= REFUSE_MIN_MB]
            if not sized:
                return
            largest = max(sized, key=lambda t: (t.size_mb, t.seq))
            self.waiting.remove(largest)
            largest.refused = largest.left = True
            self.cond.notify_all()

    def leave(self, ticket: Ticket) -> None:
        with self.cond:
            for where in (self.admitted, self.waiting):
                if ticket in where:
                    where.remove(ticket)
            ticket.admitted, ticket.left = False, True
            self._admit()
            self.cond.notify_all()

    def counts(self) -> tuple[int, int]:
        with self.cond:
            return len(self.admitted), len(self.waiting)
