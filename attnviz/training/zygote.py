"""Where the training children come from: one warm interpreter (the zygote) per app server, which
has imported torch, the training loop and what a run's first step imports (child.warm) once and
forks a child for each run.

A child started as a fresh interpreter pays torch's import at every Train click: 2.5-3 CPU-s,
and as many seconds before its first step on two busy cores (ten visitors training: ten imports
at once). A fork of the zygote starts in milliseconds and shares the imported code's memory.
multiprocessing's forkserver with `set_forkserver_preload` does the same, with a child that
starts 18-73 % slower and holds 3-4.5 MB more (bench/results_zygote.md), and it imports the
parent's `__main__` (a `streamlit` console script) into the forkserver or into every child.

    pid = fork_child(sock.fileno())   # a child runs child._child on that socket

The zygote is started the way the children used to be, as a fresh interpreter (`python -m
attnviz.training.child --zygote FD`), never a fork of the server (it has torch threads and a web
server), in a session of its own, with OpenMP, MKL and OpenBLAS on one thread, so it is one
thread when it forks (nothing in it runs a torch op). Each child calls setsid (its own
scheduling group, as child.py says why). The zygote ignores SIGCHLD, so the kernel reaps each
child as it ends: a child's pid stops existing when it ends, which is how the parent sees it gone
(child._end). The zygote ends when the server does (its end of the control socket closes); a
zygote that died is started again at the next run. Linux only (fork after torch's import is
not safe everywhere): elsewhere `available()` is False and child.py starts a fresh interpreter
per run as before.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["available", "child_env", "fork_child", "serve", "stop"]

PID_BYTES = 8
START_S = 300.0  # the first fork waits for the zygote's imports (seconds on a busy machine)
_LOCK = threading.Lock()  # one request at a time on the control socket
_ZYGOTE: tuple[subprocess.Popen[bytes], socket.socket] | None = None


def available() -> bool:
    return sys.platform == "linux" and hasattr(socket, "send_fds")


def child_env() -> dict[str, str]:
    """The environment of a training process: this attnviz first on the path, one thread each
    for OpenMP, MKL and OpenBLAS (a child trains on one torch thread; the zygote must hold no
    thread but its own when it forks)."""
    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")


def fork_child(fd: int) -> int:
    """Fork a training child that serves the socket `fd` (child._child); its pid. A zygote that is
    gone is started again once; OSError when none answers."""
    global _ZYGOTE
    with _LOCK:
        for attempt in (0, 1):
            if _ZYGOTE is None or _ZYGOTE[0].poll() is not None:
                _stop_locked()
                _ZYGOTE = _start()
            control = _ZYGOTE[1]
            try:
                socket.send_fds(control, [b"f"], [fd])
                reply = b""
                while len(reply) < PID_BYTES:
                    part = control.recv(PID_BYTES - len(reply))
                    if not part:
                        raise ConnectionError("the zygote ended")
                    reply += part
                return int.from_bytes(reply, "little", signed=True)
            except OSError:
                _stop_locked()
                if attempt:
                    raise
    raise AssertionError("unreachable")


def stop() -> None:
    """End the zygote (its children go on until their runs end)."""
    with _LOCK:
        _stop_locked()


atexit.register(stop)  # this process's exit ends its zygote and reaps it


def _start() -> tuple[subprocess.Popen[bytes], socket.socket]:
    ours, theirs = socket.socketpair()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "attnviz.training.child", "--zygote", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            env=child_env(), start_new_session=True,
        )  # fmt: skip
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    ours.settimeout(START_S)
    return proc, ours


def _stop_locked() -> None:
    global _ZYGOTE
    if _ZYGOTE is None:
        return
    proc, control = _ZYGOTE
    _ZYGOTE = None
    control.close()  # the zygote reads the end and exits
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def serve(control: socket.socket, run: Callable[[int], None]) -> None:
    """The zygote's loop (`python -m attnviz.training.child --zygote FD`: torch and the training
    loop imported once, before the first fork): a message with a socket's fd forks a child that
    calls `run(fd)`; the child's pid goes back. Ends when the server's end closes."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the children
    while True:
        try:
            message, fds, _flags, _addr = socket.recv_fds(control, 1, 1)
        except OSError:
            return
        if not message:
            return
        if not fds:
            continue
        pid = os.fork()
        if pid == 0:  # the child
            code = 1
            try:
                control.close()
                os.setsid()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                run(fds[0])
                code = 0
            finally:
                os._exit(code)
        os.close(fds[0])
        with contextlib.suppress(OSError):
            control.sendall(pid.to_bytes(PID_BYTES, "little", signed=True))
