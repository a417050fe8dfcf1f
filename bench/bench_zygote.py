"""Where a training child comes from: multiprocessing's forkserver preloading child.PRELOAD
(attnviz/training/child.py), which replaced our own zygote (bench/results_zygote.md has both side
by side before the change).

    .venv/bin/python bench/bench_zygote.py                 # 6 warm children, 2 cold
    .venv/bin/python bench/bench_zygote.py --rounds 8 --cold 3 --out bench/results_zygote.md

Each child is started as the app starts it (child._spawn) and trains a short run; the clock runs
from asking for the child until its first message (the run prepared and its first chunk of steps
trained) and until its last (the run done). The first child of a fresh process is reported apart,
one fresh process each (--cold): it starts the forkserver, which imports torch, the training loop
and torch._dynamo once. Memory: the child's USS and PSS read when its first message comes (what
a run adds to the machine), and the forkserver's RSS. Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shlex
import statistics
import subprocess
import sys
import time
from multiprocessing import forkserver
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnviz.training import TrainConfig  # noqa: E402
from attnviz.training import child as child_module  # noqa: E402

RUN = TrainConfig("copy", 60, 3, 1, 1, 16, batch_size=16)  # about a second of training


def one() -> dict[str, float]:
    """One child: seconds to its first and last message, its USS and PSS (MB) at the first."""
    t0 = time.perf_counter()
    conn, proc = child_module._spawn()
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
        child_module._end(proc, wait_s=10.0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6, help="warm children, one after another")
    ap.add_argument("--cold", type=int, default=2, help="first children, one fresh process each")
    ap.add_argument("--out", type=Path, help="append the markdown table (with the command) here")
    ap.add_argument("--one-cold", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one_cold:  # a fresh process: its first child, the figures on stdout
        print(json.dumps(one()))
        return 0
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    cold = []
    for _ in range(args.cold):
        fresh = [sys.executable, str(Path(__file__).resolve()), "--one-cold"]
        got = subprocess.run(fresh, capture_output=True, text=True, check=True, timeout=600)
        cold.append(json.loads(got.stdout.splitlines()[-1]))
        print("first child of a fresh process", cold[-1], flush=True)
    one()  # this process's forkserver started: not timed
    runs = []
    for _ in range(args.rounds):
        runs.append(one())
        print({k: round(v, 3) for k, v in runs[-1].items()}, flush=True)
    server_mb = psutil.Process(forkserver._forkserver._forkserver_pid).memory_info().rss / 1e6

    def med(key: str, of: list[dict[str, float]] = runs) -> str:
        values = [r[key] for r in of]
        return f"{statistics.median(values):.3f} ({' '.join(f'{v:.2f}' for v in values)})"

    command = shlex.join([".venv/bin/python", "bench/bench_zygote.py", *(argv if argv is not None else sys.argv[1:])])
    lines = [
        f"### `{command}`",
        "",
        f"Recorded {time.strftime('%Y-%m-%d %H:%M')}; {os.cpu_count()} CPUs, load average {load} at the start, "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end; run: {RUN}.",
        "",
        "| measure | forkserver + preload (child._spawn) |",
        "|---|---|",
        f"| first child of a fresh process (starts the forkserver): first message, s, median (each) | {med('first_s', cold)} |",
        f"| warm child: first message, s, median (each) | {med('first_s')} |",
        f"| warm child: run done, s, median (each) | {med('done_s')} |",
        f"| child USS at its first message, MB, median | {med('uss_mb')} |",
        f"| child PSS at its first message, MB, median | {med('pss_mb')} |",
        f"| the forkserver process RSS, MB | {server_mb:.0f} |",
    ]
    report = "\n".join(lines) + "\n"
    print()
    print(report)
    if args.out:
        args.out.write_text((args.out.read_text() + "\n" if args.out.exists() else "") + report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
