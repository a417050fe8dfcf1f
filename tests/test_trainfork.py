"""Where a training child comes from (attnviz/training/child.py): each run's child is a fork of
multiprocessing's forkserver (not of this process), in a session of its own; the forkserver holds
a single thread, serves run after run, is started again when it has died, and has imported what a
run's first step needs; the parent's __main__ (the app script, under Streamlit) is never run in a
child. Where there is no forkserver a fresh interpreter trains the same run. What the children
compute: tests/test_trainproc.py."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import types
from multiprocessing import forkserver
from pathlib import Path

import psutil
import pytest
import torch

from attnviz.training import TrainConfig, prepare, resume
from attnviz.training import child as child_module
from attnviz.training.child import children, resume_in_child
from tests.waiting import until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(), reason="no forkserver here"),
]
SHORT = TrainConfig("copy", 20, 3, 1, 1, 16, batch_size=16)


def _forkserver_pid() -> int:
    pid = forkserver._forkserver._forkserver_pid
    assert pid is not None
    return pid


def _parent_of_a_run() -> tuple[int, int]:
    """(the child's parent pid, the child's session id) of one run, read while it runs."""
    conn, proc = child_module._spawn()
    try:
        conn.send_bytes(pickle.dumps((SHORT, None)))
        assert conn.poll(120), "the child reports"
        first = pickle.loads(conn.recv_bytes())  # it has called setsid by now
        pid = proc.pid
        assert pid is not None
        parent, session = psutil.Process(pid).ppid(), os.getsid(pid)
        while first[0] != "done" and conn.poll(120):
            first = pickle.loads(conn.recv_bytes())
    finally:
        conn.close()
        child_module._end(proc, wait_s=10.0)
    return parent, session


def test_runs_are_forks_of_one_forkserver_each_in_a_session_of_its_own() -> None:
    first_parent, first_session = _parent_of_a_run()
    second_parent, second_session = _parent_of_a_run()
    assert first_parent == second_parent == _forkserver_pid() != os.getpid()
    assert first_session != second_session and first_session != os.getsid(0)
    assert len(os.listdir(f"/proc/{_forkserver_pid()}/task")) == 1  # one thread when it forks
    assert children() == []


def test_the_parents_main_script_is_not_run_in_a_child(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Streamlit (and AppTest) install the app script as a module named __main__ with its
    __file__: multiprocessing would run that file in every child before the run."""
    marker = tmp_path / "ran"
    script = tmp_path / "app.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n")
    fake = types.ModuleType("__main__")
    fake.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", fake)
    there = resume_in_child(prepare(SHORT), None)
    assert there.step == SHORT.steps and not marker.exists() and children() == []


def test_a_dead_forkserver_is_started_again_and_the_run_is_the_same() -> None:
    resume_in_child(prepare(SHORT), None)
    dead = _forkserver_pid()
    os.kill(dead, signal.SIGKILL)
    until(lambda: not psutil.pid_exists(dead) or psutil.Process(dead).status() == psutil.STATUS_ZOMBIE, "killed")
    there = resume_in_child(prepare(SHORT), None)
    assert _forkserver_pid() != dead
    here = resume(prepare(SHORT))
    assert there.history == here.history
    for key, value in here.model.decoder.state_dict().items():
        assert torch.equal(value, there.model.decoder.state_dict()[key]), key


def test_without_a_forkserver_a_fresh_interpreter_trains_the_same_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["fork", "spawn"])
    conn, proc = child_module._spawn()
    try:
        assert proc.pid is not None and psutil.Process(proc.pid).ppid() == os.getpid()  # started here
    finally:
        conn.close()
        child_module._end(proc, wait_s=60.0)
    there = resume_in_child(prepare(SHORT), None)
    here = resume(prepare(SHORT))
    assert there.history == here.history and children() == []


PRELOAD_PROBE = """
import sys
from attnviz.training import TrainConfig, prepare, resume
from attnviz.training.child import PRELOAD
for name in PRELOAD:
    __import__(name)
before = set(sys.modules)
resume(prepare(TrainConfig("copy", 3, 3, 1, 1, 16, batch_size=16)))
heavy = sorted(m for m in set(sys.modules) - before if m.split(".")[0] == "sympy" or m.startswith(("torch._dynamo", "torch.fx")))
print(heavy[:5])
"""


def test_the_forkserver_imports_what_a_runs_first_step_would() -> None:
    """Making the run's optimizer imports torch._dynamo (about 1 CPU-s, and a short run's child
    took 1.15 s where it takes 0.14 with it preloaded): PRELOAD holds it. (Threads: the
    forkserver's own, first test; numpy's OpenBLAS pool, started at import, stops itself before
    each fork.)"""
    probe = subprocess.run(
        [sys.executable, "-c", PRELOAD_PROBE], capture_output=True, text=True, timeout=300, check=False
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.split() == ["[]"], probe.stdout
