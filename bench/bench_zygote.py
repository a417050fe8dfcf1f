"""Where a training child comes from: the zygote (attnviz/training/zygote.py) against
multiprocessing's forkserver preloading the same modules, side by side in one process.

    .venv/bin/python bench/bench_zygote.py                 # 6 rounds, alternating
    .venv/bin/python bench/bench_zygote.py --rounds 8 --cold 3 --out bench/results_zygote.md

Each way starts a child that runs the training child's own entry (child._child) on a socket
pair; the clock runs from asking for the child until its first message (the run prepared and
its first chunk of steps trained) and until its last (a short run done). The first start of
each way is reported apart, in a fresh process each (--cold, alternating): it starts the zygote
or the forkserver, which imports torch, the training loop and torch._dynamo (child.warm) once. Memory: the child's USS and PSS read when
its first message comes (what a run adds to the machine), and the RSS of the zygote or the
forkserver itself. Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import multiprocessing.connection
import os
import pickle
import shlex
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnviz.training import TrainConfig, zygote  # noqa: E402
from attnviz.training import child as child_module  # noqa: E402

RUN = TrainConfig("copy", 60, 3, 1, 1, 16, batch_size=16)  # about a second of training
PRELOAD = ["__main__", "attnviz.training.child", "torch._dynamo"]  # what the zygote holds (child.warm)


def forkserver_entry(sock: socket.socket) -> None:
    """A forkserver child: its own session as the zygote's children, then the training child."""
    os.setsid()
    child_module._child(multiprocessing.connection.Connection(sock.detach()))


def spawn_forkserver() -> tuple[multiprocessing.connection.Connection, Any]:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    ours, theirs = socket.socketpair()
    proc = ctx.Process(target=forkserver_entry, args=(theirs,), daemon=True)
    proc.start()
    theirs.close()
    return multiprocessing.connection.Connection(ours.detach()), proc


def spawn_zygote() -> tuple[multiprocessing.connection.Connection, Any]:
    return child_module._spawn()


def helper_rss_mb(way: str) -> float:
    if way == "zygote":
        pid = zygote._ZYGOTE[0].pid if zygote._ZYGOTE else None
    else:
        from multiprocessing import forkserver

        pid = forkserver._forkserver._forkserver_pid
    return psutil.Process(pid).memory_info().rss / 1e6 if pid else float("nan")


def one(spawn: Callable[[], tuple[multiprocessing.connection.Connection, Any]]) -> dict[str, float]:
    """One child: seconds to its first and last message, its USS and PSS (MB) at the first."""
    t0 = time.perf_counter()
    conn, proc = spawn()
    out: dict[str, float] = {}
    try:
        conn.send_bytes(pickle.dumps((RUN, None)))
        first = True
        while conn.poll(300):
            message = pickle.loads(conn.recv_bytes())
            if first:
                out["first_s"] = time.perf_counter() - t0
                mem = psutil.Process(proc.pid).memory_full_info()
                out["uss_mb"], out["pss_mb"] = mem.uss / 1e6, mem.pss / 1e6
                first = False
            if message[0] in ("done", "error"):
                out["done_s"] = time.perf_counter() - t0
                if message[0] == "error":
                    raise RuntimeError(message[1])
                break
    finally:
        conn.close()
        if isinstance(proc, multiprocessing.process.BaseProcess):
            proc.join(10)
        else:
            child_module._end(proc, wait_s=10.0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6, help="warm starts of each way, alternating")
    ap.add_argument("--cold", type=int, default=2, help="first starts of each way, one fresh process each, alternating")
    ap.add_argument("--out", type=Path, help="append the markdown table (with the command) here")
    ap.add_argument("--one-cold", choices=["zygote", "forkserver"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    ways = {"zygote": spawn_zygote, "forkserver": spawn_forkserver}
    if args.one_cold:  # a fresh process: the first child of this way, its seconds on stdout
        print(json.dumps(one(ways[args.one_cold])))
        zygote.stop()
        return 0
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    cold: dict[str, list[dict[str, float]]] = {name: [] for name in ways}
    for i in range(args.cold):
        for name in list(ways) if i % 2 == 0 else list(reversed(ways)):
            fresh = [sys.executable, str(Path(__file__).resolve()), "--one-cold", name]
            got = subprocess.run(fresh, capture_output=True, text=True, check=True, timeout=600)
            cold[name].append(json.loads(got.stdout.splitlines()[-1]))
            print(name, "first child of a fresh process", cold[name][-1], flush=True)
    for spawn in ways.values():  # the zygote and the forkserver of this process started: not timed
        one(spawn)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in ways}
    for i in range(args.rounds):
        order = list(ways) if i % 2 == 0 else list(reversed(ways))
        for name in order:
            runs[name].append(one(ways[name]))
            print(name, {k: round(v, 3) for k, v in runs[name][-1].items()}, flush=True)
    helper = {name: helper_rss_mb(name) for name in ways}
    zygote.stop()

    def med(name: str, key: str, of: dict[str, list[dict[str, float]]] = runs) -> str:
        values = [r[key] for r in of[name]]
        return f"{statistics.median(values):.3f} ({' '.join(f'{v:.2f}' for v in values)})"

    command = shlex.join([".venv/bin/python", "bench/bench_zygote.py", *(argv if argv is not None else sys.argv[1:])])
    lines = [
        f"### `{command}`",
        "",
        f"Recorded {time.strftime('%Y-%m-%d %H:%M')}; {os.cpu_count()} CPUs, load average {load} at the start, "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end; run: {RUN}.",
        "",
        "| measure | zygote | forkserver + preload |",
        "|---|---|---|",
        f"| first child of a fresh process (starts the zygote / forkserver): first message, s, median (each) | "
        f"{med('zygote', 'first_s', cold)} | {med('forkserver', 'first_s', cold)} |",
        f"| warm child: first message, s, median (each) | {med('zygote', 'first_s')} | {med('forkserver', 'first_s')} |",
        f"| warm child: run done, s, median (each) | {med('zygote', 'done_s')} | {med('forkserver', 'done_s')} |",
        f"| child USS at its first message, MB, median | {med('zygote', 'uss_mb')} | {med('forkserver', 'uss_mb')} |",
        f"| child PSS at its first message, MB, median | {med('zygote', 'pss_mb')} | {med('forkserver', 'pss_mb')} |",
        f"| the zygote / forkserver process RSS, MB | {helper['zygote']:.0f} | {helper['forkserver']:.0f} |",
    ]
    report = "\n".join(lines) + "\n"
    print()
    print(report)
    if args.out:
        args.out.write_text((args.out.read_text() + "\n" if args.out.exists() else "") + report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
