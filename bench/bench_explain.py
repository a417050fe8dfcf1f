"""What the explanation methods cost next to the forward pass they explain.

    .venv/bin/python bench/bench_explain.py [--sizes 16 128 512] [--repeat 10] [--out FILE]

For each size n (tokens, specials included) with the embedded model: the forward pass
(`model.attend`), and the added time of rollout, head_stats and norm_weights (which runs its
own forward: its time over attend is reported), each also as a fraction of the forward (goal:
under 0.25). Then attention flow at min(n, its limits): all rows and one row (goal: under 5 s
at the limit). Times are the best of --repeat runs, which is what a machine shared with other
work can still measure; the median is shown beside it. Prints a markdown table and writes it,
with the command, to --out (bench/results_explain.md by default).
"""

from __future__ import annotations

import argparse
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import attnviz  # noqa: E402
from attnviz import explain  # noqa: E402

GOAL_FRACTION = 0.25
GOAL_FLOW_S = 5.0
TEXT = (
    "The animal didn't cross the street because it was tired. I deposited money in the bank, "
    "then sat by the river bank and watched the water; unbelievably, nobody else came. "
)


def timed(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, tuple[float, float]]:
    """{name: (best, median) seconds} over `repeat` rounds, after one warm-up round. Each round
    runs every function once, in turn, so that all of them meet the same load on a shared
    machine and their best times come from the same quiet moments."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for round_ in range(repeat + 1):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            if round_:
                times[name].append(time.perf_counter() - start)
    return {name: (min(t), statistics.median(t)) for name, t in times.items()}


def text_of(model: attnviz.PretrainedModel | attnviz.ScratchModel, n: int) -> str:
    """A text of exactly n tokens, specials included, so every method sees the same n."""
    ids = model.tokenizer(TEXT * (n // 10 + 1), add_special_tokens=False, verbose=False)["input_ids"]
    for cut in range(n - 2, 0, -1):  # a cut inside a word can re-tokenise longer: back off
        text = model.tokenizer.decode(ids[:cut])
        if len(model.encode(text).tokens) == n:
            return text
    raise SystemExit(f"could not build a {n}-token text")


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo, else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_line() -> str:
    cpu = cpu_name()
    import os

    return (
        f"CPU: {cpu}, {os.cpu_count()} cores, torch {torch.__version__} with {torch.get_num_threads()} threads, "
        f"Python {platform.python_version()}"
    )


def fmt(best: float, median: float) -> str:
    return f"{best * 1000:.2f} ({median * 1000:.1f})" if best < 0.01 else f"{best * 1000:.1f} ({median * 1000:.0f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 128, 512])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results_explain.md")
    args = parser.parse_args(argv)

    model = attnviz.load_model("minilm", device="cpu")
    lines = [
        "| n | attend ms | rollout ms | x fwd | head_stats ms | x fwd | norm_weights ms | extra over attend ms "
        "| x fwd | per_layer ms | x fwd |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    within = True
    for n in args.sizes:
        text = text_of(model, n)
        att = model.attend(text)
        nw = explain.norm_weights(model, text)
        assert att.n == nw.per_head.shape[-1] == n
        t = timed(
            {
                "fwd": lambda text=text: model.attend(text),
                "roll": lambda att=att: explain.rollout(att),
                "stats": lambda att=att: explain.head_stats(att),
                "norm": lambda text=text: explain.norm_weights(model, text),
                "mixed": lambda nw=nw: [nw.layer_norms(layer) for layer in range(model.n_layers)],
            },
            args.repeat,
        )
        fwd, roll, stats, norm, mixed = t["fwd"], t["roll"], t["stats"], t["norm"], t["mixed"]
        extra = max(norm[0] - fwd[0], 0.0)
        fractions = [roll[0] / fwd[0], stats[0] / fwd[0], extra / fwd[0]]
        within &= all(f < GOAL_FRACTION for f in fractions)
        lines.append(
            f"| {n} | {fmt(*fwd)} | {fmt(*roll)} | {fractions[0]:.2f} | {fmt(*stats)} | {fractions[1]:.2f} "
            f"| {fmt(*norm)} | {extra * 1000:.1f} | {fractions[2]:.2f} | {fmt(*mixed)} | {mixed[0] / fwd[0]:.2f} |"
        )
        print(lines[-1], flush=True)

    flow_lines = ["| flow | n | limit | seconds |", "|---|---:|---:|---:|"]
    biggest = max(args.sizes)
    for mode, limit, row in (
        ("all rows", explain.FLOW_MAX_N_ALL, None),
        ("one row", explain.FLOW_MAX_N_ROW, 0),
    ):
        n = min(biggest, limit)
        att = model.attend(text_of(model, n))
        rows = [row] if row is not None else [None]
        if row is not None:
            rows = [0, n // 2, n - 2]  # the cost depends on the row: report the slowest
        worst = 0.0
        for r in rows:
            start = time.perf_counter()
            explain.flow(att, row=r)
            worst = max(worst, time.perf_counter() - start)
        within &= worst < GOAL_FLOW_S
        flow_lines.append(f"| {mode} | {n} | {limit} | {worst:.2f} |")
        print(flow_lines[-1], flush=True)

    report = "\n".join(
        [
            "# Explanation methods next to the forward pass",
            "",
            "```",
            " ".join(["$", ".venv/bin/python", "bench/bench_explain.py", *map(shlex.quote, sys.argv[1:])]),
            "```",
            "",
            device_line() + ". Model: the embedded all-MiniLM-L6-v2 (6 layers x 12 heads).",
            "",
            f"Milliseconds: best of {args.repeat} (median in brackets). 'x fwd' is the best time over the best "
            f"forward (`attend`); goal under {GOAL_FRACTION}. norm_weights runs its own forward: its extra time "
            "is its best time minus attend's. It returns the per-head weights; the per-layer norms (vector sum "
            "over heads, then norm) are computed on first use of `per_layer`, or one layer at a time with "
            "`layer_norms(l)`: 'per_layer' is all layers.",
            "",
            *lines,
            "",
            f"Attention flow at min(largest size, its limit) tokens, 6 layers; one row: the slowest of rows "
            f"0, n/2, n-2. Goal: under {GOAL_FLOW_S:.0f} s.",
            "",
            *flow_lines,
            "",
            f"Every goal met: {'yes' if within else 'no'}.",
            "",
        ]
    )
    print()
    print(report)
    args.out.write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
