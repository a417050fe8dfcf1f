"""Training runs in background threads, one a session, polled by the Training lab page.

The table is module state (never st.cache_*), bounded: at most MAX_RUNNING runs train at once
in the process (each chunk of steps waits in the background lane behind other visitors'
interactive passes, attnviz/models/gate.py), and at most MAX_JOBS finished runs are kept, the
oldest first out. A run charges its session's budget (app/work.py) as it goes and stops,
keeping what it learned, when the budget is spent or the visitor presses Stop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from ..models import Cancelled
from ..training import TrainConfig, TrainingRun, prepare, resume
from . import session_models, work

__all__ = ["MAX_JOBS", "MAX_RUNNING", "Busy", "Job", "get", "running_count", "start", "stop"]

LOG = logging.getLogger("attnviz")
MAX_RUNNING = 2  # trainings at once in the process; the lane interleaves their chunks
MAX_JOBS = 256  # sessions whose last run is remembered


class Busy(RuntimeError):
    """Too many runs are training already; str() is the number running."""


@dataclass
class Job:
    session: str
    config: TrainConfig
    text: str | None
    budget_s: float  # seconds this run may spend (the session's budget left when it started)
    started: float = field(default_factory=time.monotonic)
    stop_event: threading.Event = field(default_factory=threading.Event)
    run: TrainingRun | None = None
    error: str | None = None
    budget_hit: bool = False
    finished: bool = False
    model_name: str | None = None  # its name in the session's model list, once finished
    _charged: float = 0.0

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def progress(self, _fraction: float) -> None:
        """Between chunks: charge the time spent, stop when asked to or out of budget."""
        spent = self.elapsed
        work.charge(spent - self._charged, self.session)
        self._charged = spent
        if self.stop_event.is_set():
            raise Cancelled("stopped by the visitor")
        if spent > self.budget_s:
            self.budget_hit = True
            raise Cancelled("budget")


_JOBS: OrderedDict[str, Job] = OrderedDict()
_LOCK = threading.Lock()


def get(session: str) -> Job | None:
    with _LOCK:
        return _JOBS.get(session)


def running_count() -> int:
    with _LOCK:
        return sum(not j.finished for j in _JOBS.values())


def start(session: str, config: TrainConfig, text: str | None, budget_s: float) -> Job:
    """Start a run for `session` (ValueError for a bad config, before any thread starts; Busy
    when MAX_RUNNING runs are training). A run already going for the session is stopped first."""
    config.check()
    prepared = prepare(config, text)  # the task and model are built here: bad text fails now
    with _LOCK:
        old = _JOBS.get(session)
        if old is not None and not old.finished:
            old.stop_event.set()
        others = sum(not j.finished for s, j in _JOBS.items() if s != session)
        if others >= MAX_RUNNING:
            raise Busy(str(others))
        job = Job(session, config, text, budget_s, run=prepared)
        _JOBS[session] = job
        _JOBS.move_to_end(session)
        for key in [k for k, j in _JOBS.items() if j.finished][: max(0, len(_JOBS) - MAX_JOBS)]:
            del _JOBS[key]
    threading.Thread(target=_work, args=(job,), name=f"attnviz-train-{session[:8]}", daemon=True).start()
    return job


def stop(session: str) -> None:
    job = get(session)
    if job is not None:
        job.stop_event.set()


def _work(job: Job) -> None:
    run = job.run
    assert run is not None
    try:
        resume(run, progress=job.progress, threads=1)  # this thread only: other visitors' passes keep theirs
        trained = session_models.Trained(
            run.model, run.config.task, run.config.layers, run.config.heads, run.step, run.probe.text
        )
        job.model_name = session_models.add(job.session, trained)
    except Exception as exc:  # the page shows a message; the server goes on
        LOG.warning("attnviz: training failed: %s: %.300s", type(exc).__name__, exc)
        job.error = f"{type(exc).__name__}: {str(exc)[:300]}"
    finally:
        work.charge(job.elapsed - job._charged, job.session)
        job._charged = job.elapsed
        job.finished = True
