"""Corpus runs that outlive a page: one background job per visitor, in a bounded table.

A run of the Corpus page goes on in a thread owned by this module, not by the script run that
started it, so the visitor may switch pages and come back to its progress. Each job has its own
temporary folder (the uploaded file, the run's shards and outputs) under one folder for the
process, removed when the job is replaced, evicted or the process ends.

Bounds, all in module state (never st.cache_*, which any client can clear):
- at most MAX_JOBS jobs (and so folders) are kept, oldest idle first out, and a finished job
  not looked at for JOB_TTL_S is removed;
- at most MAX_ACTIVE runs at once in the process; more are refused with a message;
- each run's forward passes go through the model's background lane one batch at a time
  (attnviz.corpus.batch), so visitors' interactive passes always go first;
- each run waits its turn in the server-wide heavy-work queue (memory budget included), its
  batches are charged to the visitor (attnviz/models/gate.py, app/server/budget.py), and it stops when
  the visitor's budget is spent; a cancelled, over-budget or crashed run keeps its shards, and
  starting it again resumes from them;
- a run whose session has gone (a closed tab) is cancelled within seconds (app/server/sessions.py).
"""

from __future__ import annotations

import atexit
import logging
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from ... import corpus
from ...models import Runner, gate
from . import budget, sessions

__all__ = ["MAX_ACTIVE", "MAX_JOBS", "Busy", "Job", "cancel", "discard", "get", "start"]

LOG = logging.getLogger("attnviz")
MAX_JOBS = 32
MAX_ACTIVE = 2
JOB_TTL_S = 3600.0
SHARD_SIZE = 64  # the page's runs write often: a page reload or a crash costs at most this many lines


class Busy(RuntimeError):
    """Too many corpus runs are going on in this server right now."""


class _Stopped(Exception):
    """The visitor cancelled, or the budget is spent: the run stops between two batches."""


@dataclass
class Job:
    session: str
    folder: Path
    input: Path
    label: str
    runner: Runner | None  # held while the run goes, dropped after: the registry owns models
    model_key: tuple[object, ...]
    max_tokens: int
    limit: int
    budget_s: float
    state: str = "running"  # running, done, failed, refused (the input: no resume), cancelled, budget
    progress: corpus.RunProgress | None = None
    error: str | None = None
    result: corpus.CorpusResult | None = None
    thread: threading.Thread | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    touched: float = field(default_factory=time.monotonic)
    charged: float = 0.0
    visitor: str = ""  # whose budget it spends: the session's visitor when started
    ticket: gate.Ticket | None = None  # its place in the heavy-work queue, once it waits there

    @property
    def out(self) -> Path:
        return self.folder / "out"

    @property
    def place(self) -> int:
        """Its place in the server's heavy-work queue: 1 for the next to go in, 0 when not waiting."""
        return 0 if self.ticket is None else self.ticket.place

    @property
    def active(self) -> bool:
        return self.state == "running"


_JOBS: OrderedDict[str, Job] = OrderedDict()
_LOCK = threading.Lock()
_ROOT: list[Path] = []


def _root() -> Path:
    if not _ROOT:
        _ROOT.append(Path(tempfile.mkdtemp(prefix="attnviz-corpus-")))
        atexit.register(shutil.rmtree, _ROOT[0], True)
    return _ROOT[0]


def new_folder() -> Path:
    """A fresh folder for one visitor's upload and run."""
    return Path(tempfile.mkdtemp(dir=_root(), prefix="job-"))


def _remove(job: Job) -> None:
    job.stop.set()
    shutil.rmtree(job.folder, ignore_errors=True)


def _evict(now: float) -> None:
    """Under _LOCK: forget idle jobs past their TTL, then the oldest idle ones beyond MAX_JOBS."""
    for key in [k for k, j in _JOBS.items() if not j.active and now - j.touched > JOB_TTL_S]:
        _remove(_JOBS.pop(key))
    idle = [k for k, j in _JOBS.items() if not j.active]
    while len(_JOBS) > MAX_JOBS and idle:
        _remove(_JOBS.pop(idle.pop(0)))


def start(job: Job) -> Job:
    """Run `job` in the background (replacing the visitor's previous job and its folder). Busy
    when MAX_ACTIVE runs are already going."""
    with _LOCK:
        _evict(time.monotonic())
        old = _JOBS.get(job.session)
        active = sum(j.active and j is not old for j in _JOBS.values())
        if active >= MAX_ACTIVE:
            raise Busy
        if old is not None and old.folder != job.folder:
            _remove(old)
        _JOBS[job.session] = job
        _JOBS.move_to_end(job.session)
        job.visitor = job.visitor or budget.visitor_of(job.session)
        _launch(job)
    session = job.session
    sessions.watch(session, "corpus", lambda: cancel(session))
    return job


def _launch(job: Job) -> None:
    job.state, job.error, job.stop = "running", None, threading.Event()
    job.thread = threading.Thread(target=_run, args=(job,), name=f"attnviz-corpus-{job.session[:8]}", daemon=True)
    job.thread.start()


def resume(session: str, runner: Runner) -> Job | None:
    """Start the visitor's stopped job again with `runner` (its model): it continues from its
    shards."""
    with _LOCK:
        job = _JOBS.get(session)
        if job is None or job.active:
            return job
        if sum(j.active for j in _JOBS.values()) >= MAX_ACTIVE:
            raise Busy
        job.runner = runner
        _launch(job)
        return job


def get(session: str) -> Job | None:
    """The visitor's job. One whose thread died without saying so (it cannot, short of the
    interpreter killing it) is started again and resumes from its shards."""
    with _LOCK:
        job = _JOBS.get(session)
        if job is None:
            return None
        job.touched = time.monotonic()
        _JOBS.move_to_end(session)
        if job.active and job.runner is not None and (job.thread is None or not job.thread.is_alive()):
            LOG.warning("attnviz: a corpus run's thread had died; resuming it from its shards")
            _launch(job)
        return job


def cancel(session: str) -> None:
    with _LOCK:
        job = _JOBS.get(session)
    if job is not None:
        job.stop.set()


def discard(session: str) -> None:
    """Forget the visitor's job and remove its folder (a running job stops first)."""
    with _LOCK:
        job = _JOBS.pop(session, None)
    if job is not None:
        job.stop.set()
        if job.thread is not None and job.thread is not threading.current_thread():
            job.thread.join(timeout=30)
        shutil.rmtree(job.folder, ignore_errors=True)


def _run(job: Job) -> None:
    def waiting(ticket: gate.Ticket) -> None:  # in the heavy-work queue: a cancel ends the wait
        job.ticket = ticket  # the page shows its place
        if job.stop.is_set():
            raise _Stopped("cancelled")

    try:
        with gate.visiting(job.visitor), gate.heavy(job.visitor, wait=waiting):
            _run_admitted(job)
    except _Stopped as stop:
        job.state, job.runner = str(stop), None


def _run_admitted(job: Job) -> None:
    def progress(p: corpus.RunProgress) -> None:
        job.progress = p
        if job.stop.is_set():
            raise _Stopped("cancelled")
        if budget.left(job.budget_s, job.visitor) <= 0:
            raise _Stopped("budget")

    runner = job.runner
    if runner is None or job.stop.is_set():
        job.state, job.error = ("failed", "no model") if runner is None else ("cancelled", None)
        job.runner = None
        return
    try:
        job.result = corpus.run(
            job.input,
            job.out,
            runner,
            max_tokens=job.max_tokens,
            limit=job.limit,
            shard_size=SHARD_SIZE,
            progress=progress,
        )
        job.state = "done"
    except _Stopped as stop:
        job.state = str(stop)
    except (ValueError, OSError) as exc:  # ValueError: the input itself (a bomb, no text column): no resume
        said = str(exc).splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        job.state, job.error = "refused" if isinstance(exc, ValueError) else "failed", said
    except Exception as exc:  # never let a thread die silently: the page shows what happened
        LOG.warning("attnviz: corpus run failed: %s: %.300s", type(exc).__name__, exc)
        job.state, job.error = "failed", type(exc).__name__
    finally:
        job.runner = None
