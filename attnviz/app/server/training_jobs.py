"""Training runs of the Training lab, in a job table (jobs.py): one run a visitor, whichever of
their tabs started it. No Streamlit here (the page is app/sections/training.py).

A run waits in the server's heavy-work queue (attnviz/models/gate.py); at most MAX_RUNNING worker
threads take the runs it lets in, and an idle one ends after IDLE_S, so Start/Stop spam adds no
threads. A worker starts a child process that trains (training/child.py: no GIL shared with the
server) and copies what it sends into the job's run, charging the time to its visitor. A Stop
ends the child at its next chunk, keeping what it learned; a closed tab's run is terminated and
forgotten; past their budget a visitor trains on until someone else waits for heavy work.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from ...models import Cancelled, gate
from ...training import TrainConfig, TrainingRun, prepare
from ...training.child import TrainingFailed, resume_in_child
from . import budget, jobs, session_models, sessions

LOG = logging.getLogger("attnviz")
MAX_RUNNING = gate.HEAVY_SLOTS  # trainings at once: as many as the heavy-work queue lets in
MAX_QUEUED = 32  # runs waiting their turn
MAX_JOBS = 256  # sessions whose last run is remembered
IDLE_S = 5.0  # a worker with nothing queued ends after this long
POLL_S = 0.1  # how often a worker looks again for a run let in

Busy = jobs.Busy


@dataclass(eq=False, kw_only=True)
class Job(jobs.Job):
    config: TrainConfig
    text: str | None
    started: float = field(default_factory=time.monotonic)
    run: TrainingRun | None = None
    budget_hit: bool = False
    gone: bool = False  # stopped because its session went away
    finished: bool = False
    queued: bool = True  # in the heavy-work queue, not yet taken by a worker
    model_name: str | None = None  # its name in the session's model list, once finished
    _charged: float = 0.0  # when the run's time was last charged to its visitor (monotonic)

    @property
    def active(self) -> bool:
        return not self.finished

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def halt(self) -> None:
        """A queued run leaves the queue at once; a training one stops at its next chunk."""
        super().halt()
        if self.queued:
            self.queued, self.finished = False, True
            if self.ticket is not None:
                gate.heavy_queue().leave(self.ticket)
            if self.run is not None:
                self.run.stopped = True

    def progress(self, _fraction: float) -> None:
        """While the child trains (every child.POLL_S): charge the time since the last call to
        the visitor; stop when asked to, or past the budget while others wait."""
        now = time.monotonic()
        budget.charge(self.visitor, now - (self._charged or now))
        self._charged = now
        if self.stop_event.is_set():
            raise Cancelled("stopped by the visitor")
        if budget.spent(self.visitor) > self.budget_s and gate.heavy_queue().others_waiting(self.visitor):
            self.budget_hit = True
            raise Cancelled("budget")


def forget(session: str, gone: bool = False) -> None:
    """Stop the session's run and forget it with the session's trained models (a closed tab)."""
    with _TABLE.cond:
        job = _JOBS.get(session)
        if job is not None:
            job.gone = gone
        _TABLE.stop(session, forget=True)
    session_models.drop(session)
    if not gone:
        sessions.unwatch(session, "training")


_TABLE: jobs.Table[Job] = jobs.Table("training", MAX_JOBS, gone=lambda session: forget(session, gone=True))
_JOBS = _TABLE.jobs
_WORKERS: list[threading.Thread] = []
get = _TABLE.get
running_count = _TABLE.count  # runs queued or training


def stop(session: str) -> None:
    """A queued run leaves the queue at once; a training one stops at its next chunk (a button's
    callback: it returns nothing)."""
    _TABLE.stop(session)


def start(session: str, config: TrainConfig, text: str | None, budget_s: float) -> Job:
    """Queue a run for `session` (ValueError for a bad config, before anything is queued; Busy
    when the visitor has a run in another session or the queue is full). A run already going
    for the session is stopped first."""
    config.check()
    prepared = prepare(config, text)  # the task and model are built here: bad text fails now
    job = Job(session=session, config=config, text=text, budget_s=budget_s, run=prepared)
    with _TABLE.cond:
        old = _JOBS.get(session)
        if old is not None and old.active:
            old.halt()
        _TABLE.add(job, MAX_QUEUED + MAX_RUNNING, one_per_visitor=True)
        job.ticket = gate.heavy_queue().enter(job.visitor)
        _WORKERS[:] = [w for w in _WORKERS if w.is_alive()]
        if len(_WORKERS) < MAX_RUNNING:
            worker = threading.Thread(target=_worker, name=f"attnviz-train-{len(_WORKERS)}", daemon=True)
            _WORKERS.append(worker)
            worker.start()
        _TABLE.cond.notify_all()
    _TABLE.watch(session)
    return job


def _take() -> Job | None:
    """The next run the heavy-work queue lets in; None once nothing has been queued for IDLE_S."""
    deadline = time.monotonic() + IDLE_S
    while True:
        with _TABLE.cond:
            queued = [j for j in _JOBS.values() if j.queued and j.ticket is not None]
            if job := next((j for j in queued if j.ticket is not None and j.ticket.admitted), None):
                job.queued, job.started = False, time.monotonic()
                return job
            if queued:  # wait on the first in line; another let in meanwhile is seen after POLL_S
                deadline, ticket = time.monotonic() + IDLE_S, min(queued, key=lambda j: j.place).ticket
            elif (left := deadline - time.monotonic()) > 0:
                _TABLE.cond.wait(left)
                continue
            else:
                _WORKERS[:] = [w for w in _WORKERS if w is not threading.current_thread()]
                return None
        assert ticket is not None
        gate.heavy_queue().wait(ticket, POLL_S)  # the memory budget is looked at again here


def _worker() -> None:
    while (job := _take()) is not None:
        try:
            with gate.visiting(job.visitor), gate.heavy(job.visitor, ticket=job.ticket, wait=job.waiting):
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
