"""Training in a child process (attnviz/training/child.py, issue 23.7): the same run as the
in-process loop for a seed; the app's Stop, a closed tab and a parent that goes away each end
the child, and every child is reaped (no process, no zombie left). Deadlines, no fixed sleeps."""

from __future__ import annotations

import functools
import pickle
from collections.abc import Iterator

import numpy as np
import psutil
import pytest
import torch

from attnviz.app.server import budget, session_models, sessions, training_jobs
from attnviz.training import TrainConfig, TrainingRun, prepare, resume
from attnviz.training import child as child_module
from attnviz.training.child import TrainingFailed, children, resume_in_child
from tests.waiting import until

pytestmark = pytest.mark.slow
LONG = TrainConfig("induction", 20_000, 0, 2, 2, 64)


_until = functools.partial(until, timeout=60.0)  # a child process starts torch first


def _gone(pids: set[int]) -> bool:
    """Every pid reaped: not running and not a zombie (a reaped pid no longer exists)."""
    return not any(psutil.pid_exists(pid) for pid in pids)


def _started(job: training_jobs.Job, pids: set[int], steps: int = 10) -> None:
    """Wait until the job's child has trained `steps` steps, noting its pid."""

    def trained() -> bool:
        pids.update(children())
        return job.run is not None and job.run.step >= steps

    _until(trained, "the child trains", timeout=120)
    assert pids, "the run trains in a child process"


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """Sessions in this set have gone, as Streamlit's runtime would say; a gone session's grace
    is 0.5 s here, not 3 s (the same path, the deadline below measured from it)."""
    monkeypatch.setattr(sessions, "GRACE_S", 0.5)
    gone: set[str] = set()
    sessions.clear()
    old = sessions.set_alive(lambda s: s not in gone)
    yield gone
    for session in list(training_jobs._JOBS):
        training_jobs.forget(session)
    _until(lambda: not children(), "every child reaped after the test")
    sessions.set_alive(old)
    budget.clear()


def test_the_child_trains_the_same_run_as_the_loop_in_this_process() -> None:
    config = TrainConfig("copy", 40, 7, 2, 2, 32, batch_size=32)
    here: TrainingRun = resume(prepare(config))
    there = resume_in_child(prepare(config), None)
    ours, theirs = here.model.decoder.state_dict(), there.model.decoder.state_dict()
    assert ours.keys() == theirs.keys()
    for key in ours:
        assert torch.equal(ours[key], theirs[key]), key
    assert there.history == here.history and there.step == here.step == 40 and not there.stopped
    assert [s.step for s in there.snapshots] == [s.step for s in here.snapshots]
    assert [s.accuracy for s in there.snapshots] == [s.accuracy for s in here.snapshots]
    np.testing.assert_array_equal(there.snapshots[-1].attention.weights, here.snapshots[-1].attention.weights)
    for name in here.task.pattern_names:
        np.testing.assert_array_equal(there.scores[name], here.scores[name])
    # the trained model answers as the in-process one does
    text = here.probe.text
    np.testing.assert_array_equal(there.model.attend(text).weights, here.model.attend(text).weights)
    assert children() == []


def test_a_childs_error_is_a_message() -> None:
    run = prepare(TrainConfig("text", 20, 0, 1, 1, 16), "注意力让每个字都去看句子里的其他字。" * 4)
    with pytest.raises(TrainingFailed, match="ValueError"):
        resume_in_child(run, None)  # the child prepares the text task without its text
    assert children() == []


def test_a_message_past_the_bound_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(child_module, "MAX_MESSAGE_BYTES", 1000)  # a snapshot's maps are more
    with pytest.raises(TrainingFailed, match="more than 1,000 bytes"):
        resume_in_child(prepare(TrainConfig("copy", 20, 0, 1, 1, 16)), None)
    assert children() == []


def test_stop_ends_the_child_and_keeps_what_it_learned(closed: set[str]) -> None:
    job = training_jobs.start("trainproc-stop", LONG, None, 600.0)
    pids: set[int] = set()
    _started(job, pids)
    training_jobs.stop("trainproc-stop")
    _until(lambda: job.finished, "the stopped run finished", timeout=child_module.GRACE_S + 30)
    run = job.run
    assert run is not None and run.stopped and 10 <= run.step < LONG.steps and job.error is None
    assert run.snapshots[-1].step == run.step  # the child's last snapshot, as the loop stops
    assert job.model_name is not None and session_models.names("trainproc-stop") == [job.model_name]
    _until(lambda: _gone(pids) and not children(), "the child reaped")


def test_a_closed_tab_ends_its_child(closed: set[str]) -> None:
    job = training_jobs.start("trainproc-closed", LONG, None, 600.0)
    pids: set[int] = set()
    _started(job, pids)
    closed.add("trainproc-closed")
    _until(lambda: job.finished, "the closed tab's run finished", timeout=sessions.GRACE_S + 30)
    assert job.gone and job.model_name is None and training_jobs.get("trainproc-closed") is None
    _until(lambda: _gone(pids) and not children(), "the child ended and was reaped", timeout=10)


def test_a_child_whose_parent_goes_away_ends_by_itself() -> None:
    conn, proc = child_module._spawn()
    try:
        conn.send_bytes(pickle.dumps((LONG, None)))
        assert conn.poll(120), "the child reports"
        conn.recv_bytes()
        conn.close()  # as when the server dies: the child's end of the pair closes
        proc.join(60)
        assert proc.exitcode is not None, "it ended by itself"
    finally:
        child_module._end(proc, wait_s=0.0)
    assert children() == []
