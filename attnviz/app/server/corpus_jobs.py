"""Corpus runs that outlive a page: one background job per session, in a job table (jobs.py).

A run goes on in a thread of this module, so the visitor may switch pages and come back to its
progress, in a temporary folder of its own (the upload, the shards, the outputs) removed when the
job is replaced or dropped. At most MAX_ACTIVE runs go or wait (more are refused). Their passes go
one batch at a time through the model's background lane, behind interactive passes, until the
visitor's budget is spent; a stopped or crashed run keeps its shards and resumes from them.
"""

from __future__ import annotations

import atexit
import functools
import logging
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from ... import corpus
from ...models import Cancelled, Runner, gate
from . import budget, jobs

LOG = logging.getLogger("attnviz")
MAX_JOBS = 32
MAX_ACTIVE = 2
JOB_TTL_S = 3600.0
SHARD_SIZE = 64  # the page's runs write often: a page reload or a crash costs at most this many lines

Busy = jobs.Busy


@dataclass(eq=False, kw_only=True)
class Job(jobs.Job):
    folder: Path
    input: Path
    label: str
    runner: Runner | None  # held while the run goes, dropped after: the registry owns models
    model_key: tuple[object, ...]
    max_tokens: int
    limit: int
    state: str = "running"  # running, done, failed, refused (the input: no resume), cancelled, budget
    progress: corpus.RunProgress | None = None
    result: corpus.CorpusResult | None = None
    thread: threading.Thread | None = None

    @property
    def out(self) -> Path:
        return self.folder / "out"

    @property
    def active(self) -> bool:
        return self.state == "running"


@functools.cache
def _root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="attnviz-corpus-"))
    atexit.register(shutil.rmtree, root, True)
    return root


def new_folder() -> Path:
    """A fresh folder for one visitor's upload and run."""
    return Path(tempfile.mkdtemp(dir=_root(), prefix="job-"))


def _remove(job: Job) -> None:
    job.stop_event.set()
    shutil.rmtree(job.folder, ignore_errors=True)


def cancel(session: str) -> None:
    _TABLE.stop(session)


_TABLE: jobs.Table[Job] = jobs.Table("corpus", MAX_JOBS, gone=cancel, drop=_remove)


def start(job: Job) -> Job:
    """Run `job` in the background (replacing the visitor's previous job and its folder). Busy
    when MAX_ACTIVE runs are already going; idle jobs not looked at for JOB_TTL_S are removed."""
    with _TABLE.cond:
        old = _TABLE.add(job, MAX_ACTIVE, idle_ttl_s=JOB_TTL_S)
        if old is not None and old.folder != job.folder:
            _remove(old)
        _launch(job)
    _TABLE.watch(job.session)
    return job


def _launch(job: Job) -> None:
    job.state, job.error, job.stop_event = "running", None, threading.Event()
    job.thread = threading.Thread(target=_run, args=(job,), name=f"attnviz-corpus-{job.session[:8]}", daemon=True)
    job.thread.start()


def resume(session: str, runner: Runner) -> Job | None:
    """Start the visitor's stopped job again with `runner` (its model): it continues from its
    shards."""
    with _TABLE.cond:
        job = _TABLE.jobs.get(session)
        if job is None or job.active:
            return job
        if _TABLE.count() >= MAX_ACTIVE:
            raise Busy(str(MAX_ACTIVE))
        job.runner = runner
        _launch(job)
        return job


def get(session: str) -> Job | None:
    """The visitor's job. One whose thread died without saying so (it cannot, short of the
    interpreter killing it) is started again and resumes from its shards."""
    with _TABLE.cond:
        job = _TABLE.get(session)
        if job is not None and job.active and job.runner is not None and not (job.thread and job.thread.is_alive()):
            LOG.warning("attnviz: a corpus run's thread had died; resuming it from its shards")
            _launch(job)
        return job


def discard(session: str) -> None:
    """Forget the visitor's job and remove its folder (a running job stops first)."""
    job = _TABLE.stop(session, forget=True)
    if job is not None:
        if job.thread is not None and job.thread is not threading.current_thread():
            job.thread.join(timeout=30)
        shutil.rmtree(job.folder, ignore_errors=True)


def _run(job: Job) -> None:
    try:
        with gate.visiting(job.visitor), gate.heavy(job.visitor, wait=job.waiting):
            _run_admitted(job)
    except Cancelled:  # a cancel while it waited its turn
        job.state, job.runner = "cancelled", None


def _run_admitted(job: Job) -> None:
    def progress(p: corpus.RunProgress) -> None:
        job.progress = p
        if job.stop_event.is_set():
            raise Cancelled("cancelled")
        if budget.left(job.budget_s, job.visitor) <= 0:
            raise Cancelled("budget")

    runner = job.runner
    if runner is None or job.stop_event.is_set():
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
    except Cancelled as stop:
        job.state = str(stop)
    except (ValueError, OSError) as exc:  # ValueError: the input itself (a bomb, no text column): no resume
        said = str(exc).splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        job.state, job.error = "refused" if isinstance(exc, ValueError) else "failed", said
    except Exception as exc:  # never let a thread die silently: the page shows what happened
        LOG.warning("attnviz: corpus run failed: %s: %.300s", type(exc).__name__, exc)
        job.state, job.error = "failed", type(exc).__name__
    finally:
        job.runner = None
