"""How fast the training lab's tasks are learned, and which heads form.

    .venv/bin/python bench/bench_training.py [--seeds 0 1 2] [--threads N] [--out FILE]

For each task (induction, copy, reverse) and seed: wall time and step at which the held-out
accuracy first reaches 90% and 99% (measured at a snapshot every --every steps, snapshots
included in the time), and the head scores at the start and the end: the best previous-token
head of layer 0, the best induction head of layer 1 (induction), the best head on the expected
pattern (copy: shifted diagonal, reverse: anti-diagonal). The clock starts when `train` is
called (building the task, tokenizer and model included), after one warm-up build per process. Beside each run of ours, in the same
process, the same model built GPT-2 style (a LayerNorm before each attention, embeddings drawn
from N(0, 0.02)): the design it was compared with (attnviz/training/model.py). Targets (issue 15, on 2 CPU cores): induction >= 90%
within 60 s with a previous-token head >= 0.5 in layer 0 and an induction score >= 0.4 in layer
1; copy and reverse 99% in under 30 s. Prints a markdown table and writes it, with the command,
to --out (bench/results_training.md by default).
"""

from __future__ import annotations

import argparse
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attnviz.training import TrainConfig, TrainingRun, prepare, resume, train  # noqa: E402

STEPS = {"induction": 1500, "copy": 500, "reverse": 500}
GOALS_S = {"induction": 60.0, "copy": 30.0, "reverse": 30.0}  # seconds to 90% (induction) / 99% (copy, reverse)


def timed_run(task: str, seed: int, steps: int, every: int, gpt2: bool) -> tuple[TrainingRun, list[float]]:
    """The run, and the wall time at each snapshot since the start."""
    start = time.perf_counter()
    times: list[float] = []
    style: dict[str, object] = {"norm": True, "embed_std": 0.02} if gpt2 else {}
    run = train(
        task,
        steps,
        seed,
        snapshot_every=every,
        on_snapshot=lambda _r: times.append(time.perf_counter() - start),
        threads=None,  # as set by --threads
        **style,
    )
    return run, times


def first_reaching(run: TrainingRun, times: list[float], level: float) -> tuple[float, int] | None:
    for snap, at in zip(run.snapshots, times, strict=True):
        if snap.accuracy >= level:
            return at, snap.step
    return None


def scores(run: TrainingRun, index: int) -> str:
    s = run.snapshot_scores[index]
    parts = []
    if "previous" in s and run.config.task == "induction":
        parts.append(f"prev L0 {np.nanmax(s['previous'][0]):.2f}")
    if "induction" in s:
        parts.append(f"ind L1 {np.nanmax(s['induction'][1]):.2f}")
    if "diagonal" in s:
        parts.append(f"diag {np.nanmax(s['diagonal']):.2f}")
    return ", ".join(parts)


def verdict(task: str, run: TrainingRun, hit: tuple[float, int] | None) -> str:
    ok = hit is not None and hit[0] <= GOALS_S[task]
    if task == "induction":
        final = run.snapshot_scores[-1]
        ok = ok and np.nanmax(final["previous"][0]) >= 0.5 and np.nanmax(final["induction"][1]) >= 0.4
    return "ok" if ok else "MISSED"


def row(task: str, seed: int, steps: int, every: int, gpt2: bool) -> str:
    run, times = timed_run(task, seed, steps, every, gpt2)
    hits = [first_reaching(run, times, level) for level in (0.9, 0.99)]
    cells = ["—" if h is None else f"{h[0]:.1f} s (step {h[1]:,})" for h in hits]
    design = "GPT-2 style (compared)" if gpt2 else "attnviz"
    last = run.snapshots[-1]
    check = verdict(task, run, hits[0 if task == "induction" else 1]) if not gpt2 else ""
    return (
        f"| {task} | {design} | {seed} | {cells[0]} | {cells[1]} | {last.accuracy:.1%} at {last.step:,} "
        f"({run.seconds:.1f} s) | {scores(run, 0)} | {scores(run, -1)} | {check} |"
    )


def step_times(rounds: int = 2, steps: int = 30) -> list[str]:
    """Median seconds a training step (induction, batch 64) on one torch thread and on two,
    alternating, so both meet the same load on a shared machine."""
    times: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(rounds):
        for threads in (1, 2):
            run = prepare(TrainConfig("induction", steps, 0, snapshot_every=steps))
            start = time.perf_counter()
            resume(run, threads=threads)
            times[threads].append((time.perf_counter() - start) / steps)
    rows = ["", "| torch threads | seconds a step (median of rounds, snapshots included) |", "|---:|---:|"]
    rows += [f"| {n} | {statistics.median(t):.4f} |" for n, t in times.items()]
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--tasks", nargs="+", default=list(STEPS), choices=list(STEPS))
    p.add_argument("--threads", type=int, default=1, help="torch threads while training (the lab's default, 1)")
    p.add_argument("--every", type=int, default=10, help="steps between snapshots (accuracy is read there)")
    p.add_argument("--scale", type=float, default=1.0, help="multiply every task's steps (a smoke test uses 0.02)")
    p.add_argument("--no-compare", action="store_true", help="skip the GPT-2 style comparison rows")
    p.add_argument("--no-step-times", action="store_true", help="skip the one-thread / two-thread step timing")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results_training.md")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    head = (
        f"cpu ({torch.get_num_threads()} threads), torch {torch.__version__}, {platform.machine()}; "
        f"held-out accuracy read every {args.every} steps, snapshots included in the time"
    )
    lines = [
        head,
        "",
        "| task | model | seed | 90% held-out | 99% held-out | final | scores at step 0 | final scores | target |",
        "|---|---|---:|---:|---:|---:|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    prepare(TrainConfig(args.tasks[0], 1))  # once per process: imports and the tokenizer's first build
    for task in args.tasks:
        steps = max(args.every, int(STEPS[task] * args.scale))
        for seed in args.seeds:
            for gpt2 in (False,) if args.no_compare else (False, True):
                lines.append(row(task, seed, steps, args.every, gpt2))
                print(lines[-1], flush=True)
    if not args.no_step_times:
        lines += step_times()
        print("\n".join(lines[-4:]), flush=True)
    command = "python bench/bench_training.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    args.out.write_text(f"```\n{command.strip()}\n```\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
