"""What a written token costs: SmolLM2 writing with `attnviz.generate` over its KV cache, against
recomputing the whole sequence and against transformers' own `generate` on the same model.

    .venv/bin/python bench/bench_generate.py [--positions 128 512 2048] [--steps 5] [--repeat 3] [--out FILE]

For each length n, the prompt is n - 1 tokens of English text, so each timed step is a step at
about n positions:
- our step: `Step.seconds` of `attnviz.generate` (choosing the token, its probability and
  alternatives, one new position through the model over the cache, every layer's attention
  row kept), median over the steps and repeats;
- recompute: one forward of the whole n positions (eager, no weights returned: the least a
  writer without a cache would run each step);
- transformers: the time between two consecutive steps of `generate(do_sample=False)` on
  transformers' causal LM around the same modules (`generation.reference.causal_lm`), read by a
  logits processor that notes the time at every step; median. Goal: our step <= 1.5x;
- the rows a step keeps (layers x heads x n x 4 bytes) and those of a 20-step generation
  there, and the KV cache at n positions, grouped against ungrouped.
Each side prefills its prompt once; each repeat writes again from that cache (ours by branching
at step 0 with the same token, transformers' from a copy of its cache), the two alternating, both
on `--threads` torch threads for a one-token step (our `generate` runs one thread for it,
models/threads.py; the default 1 holds transformers to the same). Prints a markdown table and writes it, with the command, to --out.
"""

from __future__ import annotations

import argparse
import copy
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import attnviz  # noqa: E402
from attnviz.generation.reference import causal_lm  # noqa: E402
from attnviz.models.threads import cpu_threads_for, torch_threads  # noqa: E402
from bench.bench_explain import cpu_name  # noqa: E402

TEXT = (
    "The animal didn't cross the street because it was tired. I deposited money in the bank, "
    "then sat by the river bank and watched the water; unbelievably, nobody else came. "
)


def prompt_ids(model: Any, n: int) -> list[int]:
    """n token ids of TEXT repeated (cut at a token boundary, never re-tokenised)."""
    ids = model.encode(TEXT).inputs["input_ids"][0].tolist()
    return (ids * (n // len(ids) + 1))[:n]


class Stamp:
    """A logits processor that notes when each step's scores arrive."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.times.append(time.perf_counter())
        return scores


def their_steps(lm: Any, ids: list[int], cache: Any, steps: int, threads: int) -> list[float]:
    """transformers' generate steps after `ids`, given a copy of the cache of all but the last."""
    from transformers import LogitsProcessorList

    stamp = Stamp()
    inputs = torch.tensor([ids])
    with torch.inference_mode(), torch_threads(threads):
        lm.generate(
            inputs, attention_mask=torch.ones_like(inputs), max_new_tokens=steps + 1, min_new_tokens=steps + 1,
            do_sample=False, logits_processor=LogitsProcessorList([stamp]), cache=copy.deepcopy(cache),
        )  # fmt: skip
    return [b - a for a, b in zip(stamp.times[1:], stamp.times[2:], strict=False)]  # step i: its forward + choice


def recompute(model: Any, ids: list[int]) -> float:
    inputs = torch.tensor([ids])
    start = time.perf_counter()
    with model.gate.interactive(), torch.inference_mode(), cpu_threads_for(len(ids), model.device):
        hidden = model.hf_model(input_ids=inputs, return_dict=True).last_hidden_state
        model.unembed(hidden[0, -1])
    return time.perf_counter() - start


def measure(model: Any, lm: Any, n: int, args: argparse.Namespace) -> list[str]:
    """One prefill a side: ours repeats from its prompt's cache by branching at step 0 with the
    same token, transformers' from a copy of its own prompt cache."""
    ids = prompt_ids(model, n - 1)
    gen = attnviz.generate(model, ids, steps=args.steps)
    with torch.inference_mode(), cpu_threads_for(len(ids), model.device):
        cache = lm(input_ids=torch.tensor([ids[:-1]]), use_cache=True).cache
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(args.repeat):
        again = gen.branch(0, gen.steps[0].token_id)
        ours += [s.seconds for s in again.steps[1:]]  # step 0 is the forced one, after the fork
        theirs += their_steps(lm, ids, cache, args.steps, args.threads)
    whole = recompute(model, ids + ids[:1])
    mine, ref = statistics.median(ours), statistics.median(theirs)
    row_bytes = model.n_layers * model.n_heads * n * 4
    step = gen.steps[0]
    return [
        f"{n:,}", f"{mine * 1000:.1f}", f"{whole * 1000:.1f}", f"{whole / mine:.1f}x", f"{ref * 1000:.1f}",
        f"{mine / ref:.2f}x", f"{row_bytes / 1024:,.0f}", f"{row_bytes * 20 / 2**20:,.1f}",
        f"{step.cache_bytes / 2**20:.1f} / {step.cache_bytes_ungrouped / 2**20:.1f}",
    ]  # fmt: skip


HEADER = (
    "| positions | our step, cache (ms) | recompute all (ms) | recompute / cache | transformers generate step (ms) "
    "| ours / transformers | rows a step (KB) | rows of 20 steps (MB) | KV cache grouped / ungrouped (MB) |\n"
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--positions", type=int, nargs="+", default=[128, 512, 2048])
    p.add_argument("--steps", type=int, default=5, help="steps timed a run (default 5)")
    p.add_argument("--repeat", type=int, default=3, help="runs of each side (default 3)")
    p.add_argument("--threads", type=int, default=1, help="transformers' torch threads for a step (default 1, as ours)")
    p.add_argument("--model", default="smollm2")
    p.add_argument("--out", default=str(ROOT / "bench" / "results_generate.md"))
    args = p.parse_args()
    model = attnviz.load_model(args.model, device="cpu", max_tokens=max(args.positions) + args.steps + 2)
    lm = causal_lm(model)
    rows = [measure(model, lm, n, args) for n in args.positions]
    table = HEADER + "".join("| " + " | ".join(r) + " |\n" for r in rows)
    command = "python bench/bench_generate.py " + shlex.join(sys.argv[1:])
    head = (
        f"`{command}` on {cpu_name()}, torch {torch.__version__}, {torch.get_num_threads()} threads for a "
        f"forward, {args.threads} for a one-token step; {model.name}: {model.n_layers} layers x {model.n_heads} "
        f"heads; medians of {args.steps - 1} steps x {args.repeat} runs a side, one forward to recompute\n\n"
    )
    print(head + table)
    Path(args.out).write_text("# Writing token by token: costs\n\n" + head + table, encoding="utf-8")


if __name__ == "__main__":
    main()
