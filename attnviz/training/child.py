"""Train in a child process: the same seeded loop (loop.resume), its snapshots, history and the
trained weights sent back over a pipe (a thread of the app server would share the GIL and the
server's CPU share).

    run = prepare(cfg, text)                      # the task, the probe, the untrained model
    resume_in_child(run, text, progress=...)      # `run` fills in as the child trains

The child is forked by multiprocessing's forkserver, which imported PRELOAD once per server (spawn
where there is none): never a fork of the server itself (torch threads, a web server), never a
rerun of the parent's __main__ (_without_main). It trains on one torch thread, in a session of its
own (the kernel's autogroup then gives it what the CLI gets), and ends when the parent asks (a
last snapshot and its weights; terminated past GRACE_S, weights not kept), when `abandon()` says
so, or when the parent's end of the pipe closes. Every child is joined (`_end`). A message is at
most MAX_MESSAGE_BYTES: the weights of the largest model LIMITS allow fit.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import multiprocessing.spawn
import os
import pickle
import threading
import time
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import torch

from ..models import Cancelled, Progress
from .loop import TrainingRun, prepare, resume
from .model import TinyDecoder
from .runner import TrainedModel
from .tasks import Task

if TYPE_CHECKING:  # ForkServerContext exists only where there is a forkserver
    from multiprocessing.context import ForkServerContext, SpawnContext

GRACE_S = 10.0  # a stopped child that has not sent its weights by then is terminated
MAX_MESSAGE_BYTES = 512 * 2**20
POLL_S = 0.1  # how often the parent looks at `progress` and `abandon` while it waits
# What the forkserver imports before its first fork: this module (torch, the training loop) and
# torch._dynamo, which a run's torch.optim optimizer imports.
PRELOAD = ["attnviz.training.child", "torch._dynamo"]
NAME = "attnviz-training"  # the children's process name (multiprocessing's, not the command line)
_CHILDREN: set[int] = set()  # pids started here and not yet joined
_LOCK = threading.Lock()


class TrainingFailed(RuntimeError):
    """The child could not train (its error, "Type: message"), or it ended without a word."""


def children() -> list[int]:
    """Pids of the training children started by this process and not yet joined."""
    with _LOCK:
        return sorted(_CHILDREN)


# ---- the child's side ----------------------------------------------------------------------


class _Channel:
    """The child's end: sends what the run learned, reads the parent's stop."""

    def __init__(self, conn: multiprocessing.connection.Connection) -> None:
        self.conn = conn
        self.run: TrainingRun | None = None
        self.sent = 0  # history entries already sent

    def send(self, *message: object) -> None:
        """Cancelled when the parent has gone (its end of the pipe closed)."""
        try:
            self.conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError as exc:
            raise Cancelled("the parent has gone") from exc

    def _tail(self) -> list[tuple[int, float, float]]:
        assert self.run is not None
        tail = self.run.history[self.sent :]
        self.sent += len(tail)
        return tail

    def progress(self, _fraction: float) -> None:
        """Between chunks: any word from the parent (or its end closing) stops the run."""
        assert self.run is not None
        if self.conn.poll():
            raise Cancelled("stopped by the parent")
        self.send("chunk", self.run.step, self._tail())

    def snapshot(self, run: TrainingRun) -> None:
        self.send("snap", run.step, self._tail(), run.snapshot_scores[-1], run.snapshots[-1])


def _bare(decoder: TinyDecoder, task: Task, name: str) -> TrainedModel:
    """What the loop reads of a run's model (its decoder and name), without the tokenizer the
    parent's model has (it would import transformers before the first step)."""
    return cast("TrainedModel", SimpleNamespace(decoder=decoder, task=task, name=name))


def _child(conn: multiprocessing.connection.Connection) -> None:
    """The child's whole life: a session of its own (the module's note), then read the config,
    prepare the run from the seed, train it, send the weights."""
    if hasattr(os, "setsid"):
        os.setsid()
    torch.set_num_threads(1)
    channel = _Channel(conn)
    try:
        config, text = pickle.loads(conn.recv_bytes(MAX_MESSAGE_BYTES))
        run = channel.run = prepare(config, text, wrap=_bare)
        resume(run, progress=channel.progress, on_snapshot=channel.snapshot, threads=1)
        weights = {k: v.detach().cpu().numpy() for k, v in run.model.decoder.state_dict().items()}
        state = {"step": run.step, "stopped": run.stopped, "plateau": run.plateau, "seconds": run.seconds}
        channel.send("done", run.step, channel._tail(), state, weights)
    except (Cancelled, OSError):  # the parent has gone: nobody to tell
        pass
    except Exception as exc:  # the parent shows it; no traceback travels
        with contextlib.suppress(Cancelled):
            channel.send("error", f"{type(exc).__name__}: {str(exc)[:300]}")
    finally:
        conn.close()


# ---- the parent's side ---------------------------------------------------------------------


def resume_in_child(
    run: TrainingRun,
    text: str | None,
    *,
    progress: Progress | None = None,
    abandon: Callable[[], bool] | None = None,
) -> TrainingRun:
    """Train a prepared, not yet trained `run` (from `prepare(run.config, text)`) in a child
    process. `run` fills in as the child sends (history, step, snapshots, scores) and, once it
    ends, holds the trained weights, as `resume` would leave it. `progress(fraction)` is called
    in this thread about every POLL_S and may raise Cancelled to stop (what was learned is kept
    when the child answers within GRACE_S); `abandon()` True ends the child at once.
    TrainingFailed when the child fails or dies."""
    if run.step or run.snapshots:
        raise ValueError("a child trains a run from its first step (this one has started)")
    conn, proc = _spawn()
    done = False
    try:
        with contextlib.suppress(OSError):  # a child that died at once: _follow says so
            conn.send_bytes(pickle.dumps((run.config, text), protocol=pickle.HIGHEST_PROTOCOL))
        done = _follow(run, conn, progress, abandon)
    finally:
        conn.close()
        _end(proc, wait_s=2.0 if done else 0.0)
    if not done and not (abandon is not None and abandon()):
        raise TrainingFailed(f"the training process did not stop within {GRACE_S:.0f} s; its model was not kept")
    return run


def _follow(
    run: TrainingRun,
    conn: multiprocessing.connection.Connection,
    progress: Progress | None,
    abandon: Callable[[], bool] | None,
) -> bool:
    """Apply the child's messages to `run` until it is done (True), or stopped past its grace or
    abandoned (False: the child is still going, the caller ends it)."""
    asked: float | None = None  # when the child was asked to stop
    while True:
        if (abandon is not None and abandon()) or (asked is not None and time.monotonic() - asked > GRACE_S):
            run.stopped = run.step < run.config.steps  # ended here: the weights are not kept
            return False
        if asked is None and progress is not None:
            try:
                progress(run.step / run.config.steps)
            except Cancelled:
                asked = time.monotonic()
                with contextlib.suppress(OSError):
                    conn.send_bytes(b"stop")
        if not conn.poll(POLL_S):
            continue
        try:
            message = pickle.loads(conn.recv_bytes(MAX_MESSAGE_BYTES))
        except EOFError as exc:
            raise TrainingFailed("the training process ended without its result") from exc
        except OSError as exc:
            raise TrainingFailed(f"the training process sent more than {MAX_MESSAGE_BYTES:,} bytes at once") from exc
        if _apply(run, message):
            return True


def _apply(run: TrainingRun, message: tuple[Any, ...]) -> bool:
    """One message into `run` (scores before snapshots, as a reader expects); True when done."""
    kind = message[0]
    if kind == "error":
        raise TrainingFailed(str(message[1]))
    step, tail = message[1], message[2]
    run.history.extend(tail)
    run.step = step
    if kind == "snap":
        run.snapshot_scores.append(message[3])
        run.snapshots.append(message[4])
    elif kind == "done":
        state, weights = message[3], message[4]
        run.model.decoder.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
        run.model.decoder.eval()
        run.stopped, run.plateau, run.seconds = state["stopped"], state["plateau"], run.seconds + state["seconds"]
        return True
    return False


def _without_main(name: str) -> dict[str, Any]:
    """multiprocessing's start data for a new process, less the parent's `__main__` for a training
    child: under `streamlit run` (and AppTest) `__main__` is the app script, installed by Streamlit
    as a module of that name for each run, and a child would run the whole app again first."""
    data = _preparation_data(name)
    if name == NAME:
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
    return data


_preparation_data = multiprocessing.spawn.get_preparation_data
multiprocessing.spawn.get_preparation_data = _without_main  # read by every start method's Popen


def _spawn() -> tuple[multiprocessing.connection.Connection, BaseProcess]:
    """A child joined to us by a socket pair (Pipe), forked by multiprocessing's forkserver, which
    imported PRELOAD once (where there is none, not Unix, a fresh interpreter: spawn)."""
    ctx: ForkServerContext | SpawnContext = multiprocessing.get_context("spawn")
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)  # read when the forkserver starts, at the first child
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=_child, args=(theirs,), name=NAME, daemon=True)
    try:
        proc.start()
    except OSError as exc:
        ours.close()
        raise TrainingFailed(f"the training process could not start ({type(exc).__name__})") from exc
    finally:
        theirs.close()
    with _LOCK:
        _CHILDREN.add(cast("int", proc.pid))
    return ours, proc


def _end(proc: BaseProcess, wait_s: float) -> None:
    """Reap the child: one done ends by itself after its last message (`wait_s`); else
    terminate, then kill."""
    proc.join(wait_s)
    for end in (proc.terminate, proc.kill):
        if proc.exitcode is not None:
            break
        end()
        proc.join(2.0)
    proc.join(60.0)  # killed: its end comes
    with _LOCK:
        _CHILDREN.discard(cast("int", proc.pid))
