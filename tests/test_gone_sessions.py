"""Work of a session that has gone stops within seconds (app/server/sessions.py watches Streamlit's
table of live sessions): a training run and a corpus run of a closed tab end, our threads go
back to none, and Start/Stop spam never grows the thread count (app/server/training_jobs.py runs
queued jobs on at most MAX_RUNNING workers). Deadlines and events, no fixed sleeps."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import attnviz
from attnviz.app.server import budget, session_models, sessions, training_jobs
from attnviz.app.server import corpus_jobs as jobs
from attnviz.training import TrainConfig


def _until(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for: {what} (threads: {_ours()})"
        pause.wait(0.01)


def _ours() -> list[str]:
    return [
        t.name
        for t in threading.enumerate()
        if t.name.startswith(("attnviz-train", "attnviz-corpus", "attnviz-sessions"))
    ]


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """Sessions in this set have gone, as Streamlit's runtime would say. The app's two timers
    are shortened (a gone session's grace 3 s -> 0.5 s, an idle worker's life 5 s -> 0.5 s): the
    same code paths and deadlines measured from them, without ~25 s of waiting on the clock."""
    monkeypatch.setattr(sessions, "GRACE_S", 0.5)
    monkeypatch.setattr(training_jobs, "IDLE_S", 0.5)
    gone: set[str] = set()
    for session in list(training_jobs._JOBS):  # what earlier tests (AppTest sessions never close) left
        training_jobs.forget(session)
    sessions.clear()
    _until(lambda: not _ours(), "threads of earlier tests ended before the test")
    old = sessions.set_alive(lambda s: s not in gone)
    yield gone
    for session in list(training_jobs._JOBS):
        training_jobs.forget(session)
    _until(lambda: not _ours(), "our threads ended after the test")
    sessions.set_alive(old)
    budget.clear()


def test_a_closed_tabs_training_run_stops_and_our_threads_end(closed: set[str]) -> None:
    config = TrainConfig("induction", 20_000, 0, 2, 2, 64)
    job = training_jobs.start("tab-closed", config, None, 600.0)
    _until(lambda: job.run is not None and job.run.step >= 10, "the run trains")
    closed.add("tab-closed")
    _until(lambda: job.finished, "the run of the closed tab stopped", timeout=sessions.GRACE_S + 15)
    assert job.gone and job.run is not None and job.run.step < 20_000
    assert training_jobs.get("tab-closed") is None and session_models.names("tab-closed") == []
    _until(lambda: not _ours(), "the worker and the watchdog ended", timeout=training_jobs.IDLE_S + 15)


def test_start_stop_spam_never_grows_the_threads(closed: set[str]) -> None:
    config = TrainConfig("copy", 2_000, 0, 1, 1, 16)
    counts = []
    for i in range(40):
        training_jobs.start(f"spam-{i % 4}", config, None, 600.0)
        training_jobs.stop(f"spam-{i % 4}")
        counts.append(len(_ours()))
    assert max(counts) <= training_jobs.MAX_RUNNING + 1  # the workers and the watchdog
    closed.update(f"spam-{i}" for i in range(4))
    _until(lambda: not _ours(), "threads back to none", timeout=training_jobs.IDLE_S + sessions.GRACE_S + 15)


def test_one_training_run_per_visitor_across_tabs(closed: set[str]) -> None:
    budget.bind("tab-a", "c:" + "b" * 32)
    budget.bind("tab-b", "c:" + "b" * 32)
    config = TrainConfig("copy", 2_000, 0, 1, 1, 16)
    training_jobs.start("tab-a", config, None, 600.0)
    with pytest.raises(training_jobs.Busy, match="visitor"):
        training_jobs.start("tab-b", config, None, 600.0)
    training_jobs.stop("tab-a")
    _until(lambda: training_jobs.get("tab-a").finished, "the first run stopped")  # type: ignore[union-attr]
    training_jobs.start("tab-b", config, None, 600.0)  # now the visitor's one run may go
    closed.update({"tab-a", "tab-b"})


def test_a_closed_tabs_corpus_run_is_cancelled(
    closed: set[str], minilm: attnviz.PretrainedModel, tmp_path: Path
) -> None:
    source = tmp_path / "lines.txt"
    source.write_text("\n".join(f"line {i} of a corpus that takes a while to read" for i in range(2000)))
    job = jobs.Job(session="tab-corpus", folder=tmp_path, input=source, label="lines.txt", runner=minilm,
                   model_key=("minilm", "cpu", ()), max_tokens=32, limit=2000, budget_s=600.0)  # fmt: skip
    jobs.start(job)
    _until(lambda: job.progress is not None, "the corpus run goes")
    closed.add("tab-corpus")
    _until(lambda: not job.active, "the closed tab's corpus run stopped", timeout=sessions.GRACE_S + 15)
    assert job.state == "cancelled"
    jobs.discard("tab-corpus")
    _until(lambda: not _ours(), "threads back to none")
