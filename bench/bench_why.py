"""What "why a head looks there" costs (docs/WHY.md): `explain.score_sources` at a few lengths
(one recorded forward plus the parts at two positions) next to a plain `attend` of the same
text, and `explain.composition` of every pair of heads from the weights.

    .venv/bin/python bench/bench_why.py [--model smollm2] [--tokens 16,64,256] [--repeat 3] [--out FILE]

score_sources picks the last layer's first head, the last token as the query and the first as
the key (the most parts: embed, every head and MLP below). Best and median of --repeat runs,
alternating with attend. Prints a markdown table and writes it, with the command, to --out.
"""

from __future__ import annotations

import argparse
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
from bench.bench_explain import cpu_name  # noqa: E402

TEXT = (
    "The animal didn't cross the street because it was tired. I deposited money in the bank, "
    "then sat by the river bank and watched the water; unbelievably, nobody else came. "
)


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def rows(model: attnviz.Runner, sizes: list[int], repeat: int) -> list[str]:
    out = []
    for n in sizes:
        text = model.fit(TEXT * 40, n)
        tokens = len(model.encode(text).tokens)
        last = model.n_layers - 1
        why, plain = [], []
        for _ in range(repeat):
            why.append(timed(lambda: explain.score_sources(model, text, last, 0, tokens - 1, 0)))  # noqa: B023
            plain.append(timed(lambda: model.attend(text)))  # noqa: B023
        parts = len(explain.score_sources(model, text, last, 0, tokens - 1, 0).query_parts)
        out.append(
            f"| score_sources, {tokens} tokens, layer {last} ({parts} parts a side) (s) | {min(why):.3f} | "
            f"{statistics.median(why):.3f} | attend: {min(plain):.3f} / {statistics.median(plain):.3f} |"
        )
    comp = [timed(lambda: explain.composition(model)) for _ in range(repeat)]
    heads = model.n_layers * model.n_heads
    out.append(
        f"| composition, {heads} heads, every earlier pair (s) | {min(comp):.3f} | {statistics.median(comp):.3f} | |"
    )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", default="smollm2")
    p.add_argument("--tokens", default="16,64,256")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model = attnviz.load_model(args.model, device="cpu")
    sizes = [int(s) for s in args.tokens.split(",")]
    table = [
        "| measure | best | median | beside |",
        "|---|---|---|---|",
        *rows(model, sizes, max(1, args.repeat)),
    ]
    command = "python bench/bench_why.py " + shlex.join(sys.argv[1:])
    head = (
        f"`{command}` on {cpu_name()}, torch {torch.__version__}, {torch.get_num_threads()} threads, model {model.name}"
    )
    text = "\n".join([head, "", *table])
    print(text)
    if args.out:
        args.out.write_text(f"# Why a head looks there: costs\n\n{text}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
