"""The training children's zygote (attnviz/training/zygote.py): each run's child is a fork of one
warm interpreter (not of this process), in a session of its own; the zygote holds a single
thread when it forks, serves run after run, is started again when it has died, and ends with
its control socket. Where there is no zygote a fresh interpreter trains the same run. What the
children compute: tests/test_trainproc.py."""

from __future__ import annotations

import os
import pickle
import signal
import socket
import subprocess
import sys

import psutil
import pytest
import torch

from attnviz.training import TrainConfig, prepare, resume, zygote
from attnviz.training import child as child_module
from attnviz.training.child import children, resume_in_child
from tests.waiting import until

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not zygote.available(), reason="the zygote is Linux's")]
SHORT = TrainConfig("copy", 20, 3, 1, 1, 16, batch_size=16)


def _zygote_pid() -> int:
    assert zygote._ZYGOTE is not None
    return zygote._ZYGOTE[0].pid


def _parent_of_a_run() -> tuple[int, int]:
    """(the child's parent pid, the child's session id) of one run, read while it runs."""
    conn, proc = child_module._spawn()
    try:
        conn.send_bytes(pickle.dumps((SHORT, None)))
        assert conn.poll(120), "the child reports"
        first = pickle.loads(conn.recv_bytes())  # it has called setsid by now
        parent, session = psutil.Process(proc.pid).ppid(), os.getsid(proc.pid)
        while first[0] != "done" and conn.poll(120):
            first = pickle.loads(conn.recv_bytes())
    finally:
        conn.close()
        child_module._end(proc, wait_s=10.0)
    return parent, session


def test_runs_are_forks_of_one_zygote_each_in_a_session_of_its_own() -> None:
    first_parent, first_session = _parent_of_a_run()
    second_parent, second_session = _parent_of_a_run()
    assert first_parent == second_parent == _zygote_pid() != os.getpid()
    assert first_session != second_session and first_session != os.getsid(0)
    assert len(os.listdir(f"/proc/{_zygote_pid()}/task")) == 1  # one thread when it forks
    assert children() == []


def test_a_dead_zygote_is_started_again_and_the_run_is_the_same() -> None:
    resume_in_child(prepare(SHORT), None)
    dead = _zygote_pid()
    os.kill(dead, signal.SIGKILL)
    until(lambda: not psutil.pid_exists(dead) or psutil.Process(dead).status() == psutil.STATUS_ZOMBIE, "killed")
    there = resume_in_child(prepare(SHORT), None)
    assert _zygote_pid() != dead
    here = resume(prepare(SHORT))
    assert there.history == here.history
    for key, value in here.model.decoder.state_dict().items():
        assert torch.equal(value, there.model.decoder.state_dict()[key]), key


def test_stop_ends_the_zygote_and_the_next_run_starts_another() -> None:
    resume_in_child(prepare(SHORT), None)
    old = _zygote_pid()
    zygote.stop()
    assert zygote._ZYGOTE is None and not psutil.pid_exists(old)  # reaped
    resume_in_child(prepare(SHORT), None)
    assert _zygote_pid() != old


def test_without_a_zygote_a_fresh_interpreter_trains_the_same_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zygote, "available", lambda: False)
    conn, proc = child_module._spawn()
    try:
        assert psutil.Process(proc.pid).ppid() == os.getpid()  # started here, not forked
    finally:
        conn.close()
        child_module._end(proc, wait_s=60.0)
    there = resume_in_child(prepare(SHORT), None)
    here = resume(prepare(SHORT))
    assert there.history == here.history and children() == []


WARM_PROBE = """
import os, sys
from attnviz.training import TrainConfig, prepare, resume
from attnviz.training.child import warm
warm()
threads = len(os.listdir("/proc/self/task"))
before = set(sys.modules)
resume(prepare(TrainConfig("copy", 3, 3, 1, 1, 16, batch_size=16)))
heavy = sorted(m for m in set(sys.modules) - before if m.split(".")[0] == "sympy" or m.startswith(("torch._dynamo", "torch.fx")))
print(threads, heavy[:5])
"""


def test_the_zygote_imports_what_a_runs_first_step_would_before_it_forks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Making the run's optimizer imports torch._dynamo (about 1 CPU-s, and a short run's child
    took 1.15 s where it now takes 0.14): `warm` imports it in the zygote, which stays one thread,
    so no forked child pays it; and the zygote's entry warms before it serves."""
    probe = subprocess.run(
        [sys.executable, "-c", WARM_PROBE],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.split() == ["1", "[]"], probe.stdout
    calls: list[str] = []
    monkeypatch.setattr(child_module, "warm", lambda: calls.append("warm"))

    def serve(control: socket.socket, run: object) -> None:
        calls.append(f"serve {getattr(run, '__name__', run)}")
        control.close()  # the zygote's end, which the real loop leaves as it exits

    monkeypatch.setattr(zygote, "serve", serve)
    ours, theirs = socket.socketpair()
    with ours:
        child_module.main(["--zygote", str(theirs.detach())])
    assert calls == ["warm", "serve serve_fd"]
