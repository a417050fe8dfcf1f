"""Work that outlives a page run (a corpus run, a training run): one job a session, in a table.

A job belongs to the tab that started it and spends its visitor's budget; it waits in the
server's heavy-work queue (attnviz/models/gate.py), where `place` says where it stands, and a Stop
or a closed tab ends that wait at once. A table is module state (never st.cache_*, which any
client can clear), bounded: at most `limit` jobs going or waiting, and beyond `max_jobs` sessions
the oldest idle jobs are dropped.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ...models import Cancelled, fair, gate
from . import budget, sessions


class Busy(RuntimeError):
    """The job cannot start now: str() is "visitor" (one of theirs is going in another tab) or
    the number of jobs going and waiting."""


@dataclass(eq=False, kw_only=True)
class Job:
    session: str
    budget_s: float  # the visitor's budget
    visitor: str = ""  # whose budget it spends: the session's visitor when started
    stop_event: threading.Event = field(default_factory=threading.Event)
    error: str | None = None
    ticket: gate.Ticket | None = None  # its place in the heavy-work queue, once it waits there
    seq: int = field(default_factory=fair.arrival)
    touched: float = field(default_factory=time.monotonic)

    @property
    def active(self) -> bool:
        """Going or waiting its turn."""
        raise NotImplementedError

    @property
    def place(self) -> int:
        """Its place in the server's heavy-work queue: 1 for the next to go in, 0 when not waiting."""
        return 0 if self.ticket is None else self.ticket.place

    def waiting(self, ticket: gate.Ticket) -> None:
        """Called while it waits in the heavy-work queue: the page shows its place; a Stop ends
        the wait."""
        self.ticket = ticket
        if self.stop_event.is_set():
            raise Cancelled("stopped while waiting")

    def halt(self) -> None:
        """Under the table's cond: stop at the next chance (in the queue at once, else between
        two steps)."""
        self.stop_event.set()


J = TypeVar("J", bound=Job)


class Table(Generic[J]):
    """The jobs of one kind, by session. `gone(session)` is called when a session with a job
    goes away (a closed tab); `drop(job)` when a job is dropped to keep the table bounded."""

    def __init__(
        self, kind: str, max_jobs: int, gone: Callable[[str], None], drop: Callable[[J], None] = lambda _job: None
    ) -> None:
        self.kind, self.max_jobs, self.gone, self.drop = kind, max_jobs, gone, drop
        self.jobs: OrderedDict[str, J] = OrderedDict()
        self.cond = threading.Condition()

    def get(self, session: str) -> J | None:
        with self.cond:
            job = self.jobs.get(session)
            if job is not None:
                job.touched = time.monotonic()
                self.jobs.move_to_end(session)
            return job

    def add(self, job: J, limit: int, *, one_per_visitor: bool = False, idle_ttl_s: float | None = None) -> J | None:
        """Under cond: `job` becomes its session's (the one it replaces is returned, as it was).
        Busy when `limit` other jobs are going or waiting, or (`one_per_visitor`) when one of the
        visitor's other tabs has one. Idle jobs not looked at for `idle_ttl_s` are dropped, then
        the oldest idle ones beyond `max_jobs`."""
        job.visitor = job.visitor or budget.visitor_of(job.session)
        old = self.jobs.get(job.session)
        others = [j for j in self.jobs.values() if j.active and j is not old]
        if one_per_visitor and any(j.visitor == job.visitor for j in others):
            raise Busy("visitor")
        if len(others) >= limit:
            raise Busy(str(len(others)))
        self.jobs[job.session] = job
        self.jobs.move_to_end(job.session)
        now = time.monotonic()
        for session, idle in list(self.jobs.items()):  # oldest first
            stale = idle_ttl_s is not None and now - idle.touched > idle_ttl_s
            if not idle.active and idle is not job and (stale or len(self.jobs) > self.max_jobs):
                self.drop(self.jobs.pop(session))
        return old

    def watch(self, session: str) -> None:
        """Outside cond: `gone(session)` once the session has gone."""
        sessions.watch(session, self.kind, lambda: self.gone(session))

    def stop(self, session: str, forget: bool = False) -> J | None:
        """Stop the session's job (a queued one leaves the queue at once); `forget`: drop it too."""
        with self.cond:
            job = self.jobs.pop(session, None) if forget else self.jobs.get(session)
            if job is not None:
                job.halt()
                self.cond.notify_all()
            return job

    def count(self) -> int:
        """Jobs going or waiting."""
        with self.cond:
            return sum(j.active for j in self.jobs.values())
