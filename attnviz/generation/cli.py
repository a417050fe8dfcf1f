"""`python -m attnviz generate "PROMPT"`: a decoder writes after the prompt, token by token.

    python -m attnviz generate "The capital of France is" --steps 10 --json out/gen.json --npz out/rows.npz

Prints each step (the token, its probability, the likeliest alternatives, the KV cache's size
grouped and ungrouped, the step's time). --json writes the same as one JSON object (the prompt
as "text", last); --npz the attention rows: `rows` float32 (steps, layers, heads, positions),
step i's row over the first n_prompt + i + 1 positions and zeros after it (the written tokens'
rows of the causal map), with `positions`, `token_ids` and `n_prompt`. Exit status 0 on
success, 2 on bad input or a model that cannot write (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

import numpy as np

from .._cli import Parser, guarded, load_model, read_text, write_json
from ..models.errors import ModelLoadError
from .limits import MAX_STEPS, check_arguments

if TYPE_CHECKING:
    from .steps import Generation


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        "attnviz generate",
        "A decoder writes after a prompt token by token: each step's token, alternatives, attention and KV cache.",
    )
    p.add_argument("prompt", help="the text to continue ('-' reads standard input)")
    p.add_argument("--model", default="smollm2", help="smollm2 (default), a causal Hugging Face id or a directory")
    p.add_argument("--steps", type=int, default=20, help=f"tokens to write (default 20, at most {MAX_STEPS})")
    p.add_argument("--temperature", type=float, default=0.0, help="0: greedy (default); more: seeded sampling")
    p.add_argument("--top-k", type=int, default=None, help="sample among the K likeliest tokens only")
    p.add_argument("--seed", type=int, default=0, help="seed of the draws (default 0): the same seed writes the same")
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), cpu or cuda")
    p.add_argument("--json", metavar="OUT", help="write the steps as JSON to OUT ('-' for stdout)")
    p.add_argument("--npz", metavar="OUT", help="write every step's attention rows to OUT (.npz)")
    return p


def rows_array(gen: Generation) -> np.ndarray:
    """The steps' rows side by side, zero-padded to the last: (steps, layers, heads, positions)."""
    width = gen.steps[-1].position + 1
    out = np.zeros((len(gen.steps), *gen.steps[0].rows.shape[:2], width), dtype=np.float32)
    for i, step in enumerate(gen.steps):
        out[i, :, :, : step.position + 1] = step.rows
    return out


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def body() -> int:
        check_arguments(args.steps, args.temperature, args.top_k, args.seed)
        prompt = read_text(args.prompt)
        from .write import generate

        model = load_model(args.model, device=args.device)
        gen = generate(model, prompt, args.steps, temperature=args.temperature, top_k=args.top_k, seed=args.seed)
        if args.npz:
            np.savez_compressed(
                args.npz, rows=rows_array(gen), positions=np.array([s.position for s in gen.steps]),
                token_ids=np.array(gen.ids), n_prompt=np.array(gen.n_prompt),
            )  # fmt: skip
        if args.json:
            doc = {**gen.summary(), "device": str(model.device), "layers": model.n_layers, "heads": model.n_heads}
            doc["text"] = gen.prompt  # last, as in the other --json documents
            write_json(args.json, json.dumps(doc, ensure_ascii=False).encode("utf-8", "backslashreplace"))
            if args.json == "-":  # standard output carries the JSON alone
                return 0
        _print_steps(gen)
        for path in (args.json, args.npz):
            if path:
                print(f"wrote {path}")
        return 0

    return guarded("attnviz generate", body, (ValueError, ModelLoadError, OSError))


def _print_steps(gen: Generation) -> None:
    print(f"{gen.model}: {json.dumps(gen.prompt, ensure_ascii=False)} + {len(gen.steps)} tokens")
    print(f"{'step':>4}  {'token':<16} {'p':>6}  {'cache KB (grouped / ungrouped)':>31} {'ms':>6}  alternatives")
    for i, s in enumerate(gen.steps):
        alts = ", ".join(f"{json.dumps(t, ensure_ascii=False)} {p:.3f}" for t, p in s.alternatives if t != s.token)
        cache = f"{s.cache_bytes / 1024:,.1f} / {s.cache_bytes_ungrouped / 1024:,.1f}"
        token = json.dumps(s.token, ensure_ascii=False)
        print(f"{i:>4}  {token:<16} {s.probability:>6.3f}  {cache:>31} {s.seconds * 1000:>6.1f}  {alts}")
    print(f"written: {json.dumps(gen.written, ensure_ascii=False)}")
