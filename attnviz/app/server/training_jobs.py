"""Training runs of the Training lab, shared fairly: a queue, a few workers, one run a visitor.

No Streamlit here (the page is app/sections/training.py). The table is module state (never
st.cache_*), bounded:
- a Train click queues a run; at most MAX_RUNNING worker threads take runs, each the queued
  run of the visitor who has spent least (app/server/budget.py), admitted as heavy work
  (attnviz/models/gate.py); the page shows a queued run's place; at most MAX_QUEUED wait;
- a worker thread does not train: it starts a child process that does (training/child.py, one
  torch thread, no GIL shared with the server's threads: issue 23.7) and copies what the child
  sends into the job's run, which the page reads; the run's time is charged to its visitor;
- one run (queued or training) per visitor, whichever of their tabs started it;
- a worker with nothing to do ends after IDLE_S, so Start/Stop spam never adds threads: a
  stopped queued run just leaves the queue;
- a run whose session has gone (a closed tab) is stopped within seconds (app/server/sessions.py), its
  child terminated, and forgotten with the session's trained models; a Stop ends the child at
  its next chunk (what it learned is kept), or terminates it after child.GRACE_S;
- a visitor past their budget keeps training while nobody else waits, and stops (keeping what
  it learned) at the next chunk once someone does;
- at most MAX_JOBS finished runs are kept, the oldest first out.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from ...models import Cancelled, gate
from ...training import TrainConfig, TrainingRun, prepare
from ...training.child import TrainingFailed, resume_in_child
from . import budget, session_models, sessions

__all__ = ["MAX_JOBS", "MAX_QUEUED", "MAX_RUNNING", "Busy", "Job", "forget", "get", "running_count", "start", "stop"]

LOG = logging.getLogger("attnviz")
MAX_RUNNING = 2  # trainings at once in the process; the lane interleaves their chunks
MAX_QUEUED = 32  # runs waiting for a worker
MAX_JOBS = 256  # sessions whose last run is remembered
IDLE_S = 5.0  # a worker with nothing queued ends after this long


class Busy(RuntimeError):
    """The run cannot be queued: str() is "visitor" (one already going for this visitor) or
    the number of runs going and waiting."""


_SEQ = itertools.count()


@dataclass
class Job:
    session: str
    config: TrainConfig
    text: str | None
    budget_s: float  # the visitor's budget: past it, the run gives way when someone waits
    visitor: str = ""
    started: float = field(default_factory=time.monotonic)
    stop_event: threading.Event = field(default_factory=threading.Event)
    run: TrainingRun | None = None
    error: str | None = None
    budget_hit: bool = False
    gone: bool = False  # stopped because its session went away
    finished: bool = False
    queued: bool = True
    model_name: str | None = None  # its name in the session's model list, once finished
    ticket: gate.Ticket | None = None  # its place in the heavy-work queue, once it waits there
    seq: int = field(default_factory=lambda: next(_SEQ))
    _charged: float = 0.0  # when the run's time was last charged to its visitor (monotonic)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def heavy_place(self) -> int:
        """Taken from the training queue, its place in the server's heavy-work queue (the memory
        budget, other visitors' explanations and corpus runs): 1 for the next, 0 when not waiting."""
        return 0 if self.ticket is None else self.ticket.place

    @property
    def place(self) -> int:
        """1 for the next run to train, 0 when not waiting."""
        with _COND:
            order = _order()
            return order.index(self) + 1 if self in order else 0

    def progress(self, _fraction: float) -> None:
        """While the child trains (every child.POLL_S): charge the time since the last call to
        the visitor; stop when asked to, or past the budget while others wait."""
        now = time.monotonic()
        budget.charge(self.visitor, now - (self._charged or now))
        self._charged = now
        if self.stop_event.is_set():
            raise Cancelled("stopped by the visitor")
        if budget.spent(self.visitor) > self.budget_s and _others_waiting(self.visitor):
            self.budget_hit = True
            raise Cancelled("budget")


_JOBS: OrderedDict[str, Job] = OrderedDict()
_QUEUE: list[Job] = []
_WORKERS: list[threading.Thread] = []
_COND = threading.Condition()


def _order() -> list[Job]:
    """Under _COND: the queue, least-spent visitor first, then in arrival order."""
    return sorted(_QUEUE, key=lambda j: (budget.spent(j.visitor), j.seq))


def _others_waiting(visitor: str) -> bool:
    with _COND:
        return any(j.visitor != visitor for j in _QUEUE)


def get(session: str) -> Job | None:
    with _COND:
        return _JOBS.get(session)


def running_count() -> int:
    """Runs queued or training."""
    with _COND:
        return sum(not j.finished for j in _JOBS.values())


def workers() -> int:
    with _COND:
        return sum(w.is_alive() for w in _WORKERS)


def start(session: str, config: TrainConfig, text: str | None, budget_s: float) -> Job:
    """Queue a run for `session` (ValueError for a bad config, before anything is queued; Busy
    when the visitor has a run in another session or the queue is full). A run already going
    for the session is stopped first."""
    config.check()
    prepared = prepare(config, text)  # the task and model are built here: bad text fails now
    visitor = budget.visitor_of(session)
    with _COND:
        old = _JOBS.get(session)
        if old is not None and not old.finished:
            _stop(old)
        if any(not j.finished and j.visitor == visitor and s != session for s, j in _JOBS.items()):
            raise Busy("visitor")
        if len(_QUEUE) >= MAX_QUEUED:
            raise Busy(str(len(_QUEUE) + MAX_RUNNING))
        job = Job(session, config, text, budget_s, visitor=visitor, run=prepared)
        _JOBS[session] = job
        _JOBS.move_to_end(session)
        for key in [k for k, j in _JOBS.items() if j.finished][: max(0, len(_JOBS) - MAX_JOBS)]:
            del _JOBS[key]
        _QUEUE.append(job)
        _WORKERS[:] = [w for w in _WORKERS if w.is_alive()]
        if len(_WORKERS) < MAX_RUNNING:
            worker = threading.Thread(target=_worker, name=f"attnviz-train-{len(_WORKERS)}", daemon=True)
            _WORKERS.append(worker)
            worker.start()
        _COND.notify_all()
    sessions.watch(session, "training", lambda: forget(session, gone=True))
    return job


def _stop(job: Job) -> None:
    """Under _COND: a queued run leaves the queue at once; a training one stops at its next chunk."""
    job.stop_event.set()
    if job in _QUEUE:
        _QUEUE.remove(job)
        job.finished = True
        job.queued = False
        if job.run is not None:
            job.run.stopped = True


def stop(session: str) -> None:
    with _COND:
        job = _JOBS.get(session)
        if job is not None:
            _stop(job)


def forget(session: str, gone: bool = False) -> None:
    """Stop the session's run and forget it with the session's trained models (a closed tab)."""
    with _COND:
        job = _JOBS.pop(session, None)
        if job is not None:
            job.gone = gone
            _stop(job)
    session_models.drop(session)
    if not gone:
        sessions.unwatch(session, "training")


def _take() -> Job | None:
    with _COND:
        deadline = time.monotonic() + IDLE_S
        while not _QUEUE:
            left = deadline - time.monotonic()
            if left <= 0:
                if threading.current_thread() in _WORKERS:
                    _WORKERS.remove(threading.current_thread())
                return None
            _COND.wait(left)
        job = _order()[0]
        _QUEUE.remove(job)
        job.queued = False
        job.started = time.monotonic()
        return job


def _worker() -> None:
    while (job := _take()) is not None:

        def waiting(ticket: gate.Ticket, job: Job = job) -> None:  # a Stop ends the wait for memory
            job.ticket = ticket  # the page shows its place
            if job.stop_event.is_set():
                raise Cancelled("stopped while waiting")

        try:
            with gate.visiting(job.visitor), gate.heavy(job.visitor, wait=waiting):
                _work(job)
        except Cancelled:
            if job.run is not None:
                job.run.stopped = True
            job.finished = True


def _work(job: Job) -> None:
    run = job.run
    assert run is not None
    try:
        if not job.stop_event.is_set():
            resume_in_child(run, job.text, progress=job.progress, abandon=lambda: job.gone)
        if not job.gone:
            trained = session_models.Trained(
                run.model, run.config.task, run.config.layers, run.config.heads, run.step, run.probe.text
            )
            job.model_name = session_models.add(job.session, trained)
    except TrainingFailed as exc:  # the child's own error or its end, already worded
        LOG.warning("attnviz: training failed: %.300s", exc)
        job.error = str(exc)[:300]
    except Exception as exc:  # the page shows a message; the server goes on
        LOG.warning("attnviz: training failed: %s: %.300s", type(exc).__name__, exc)
        job.error = f"{type(exc).__name__}: {str(exc)[:300]}"
    finally:
        job.finished = True  # the watch stays: a closed tab's finished run and models go too
