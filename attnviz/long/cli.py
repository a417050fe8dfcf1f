"""`python -m attnviz long FILE --model smollm2 --out DIR`: attention of a long text, every head.

Writes DIR/long.npz (overview: layers x heads x b x b block means; received: layers x heads x n
column sums; edges: the b + 1 block edges) and DIR/long.json (the model, the tokens, the shape,
and each head's five most-received tokens). Progress goes to stderr. Exit status 0 on success,
2 on bad input (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from .._cli import Parser, guarded
from .._malloc import return_large_frees_to_the_os
from ..config import check_text, settings_from_env
from ..models import ModelLoadError, load_model
from .attention import LongAttention, block_edges
from .run import attend_long, estimate, long_settings


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        "attnviz long",
        "Exact attention of a long text (up to 8,192 tokens): overviews and received weights of every head.",
    )
    p.add_argument("file", help="a UTF-8 text file ('-' reads standard input)")
    p.add_argument("--model", default="smollm2", help="smollm2 (default), minilm, scratch, a Hugging Face id or folder")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for long.npz and long.json")
    p.add_argument(
        "--max-tokens", type=int, default=None, help="tokens read (default: the model's limit, at most 8192)"
    )
    p.add_argument("--size", type=int, default=256, help="blocks a side of each overview (default 256)")
    p.add_argument("--device", default="cpu", help="cpu (default), cuda or auto")
    return p


def _say(message: str) -> None:
    print(f"attnviz long: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def body() -> int:
        return_large_frees_to_the_os()  # 8,192 tokens of SmolLM2: 1.76 GB at its peak, not 2.38
        if args.size < 1:
            raise ValueError("--size must be at least 1")
        try:
            raw = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
            text = check_text(raw, settings_from_env().max_chars)
        except UnicodeDecodeError:
            raise ValueError(f"{args.file} is not UTF-8 text") from None
        limit = args.max_tokens if args.max_tokens is not None else long_settings().max_tokens
        model = load_model(args.model, device=args.device, max_tokens=min(limit, 512))
        _say(f"{model.name}: {model.n_layers} layers x {model.n_heads} heads")
        long = attend_long(model, text, max_tokens=limit, progress=lambda d, t: _say(f"forward: layer {d}/{t}"))
        est = estimate(model, long.n)
        _say(f"{long.n:,} tokens; full maps would be {est.full_bytes / 1e9:.2f} GB, kept {est.kept_bytes / 1e6:.1f} MB")
        if long.truncated:
            _say(f"note: input truncated to {long.n:,} of {long.n_input_tokens:,} tokens")
        write(long, Path(args.out), args.size)
        _say(f"wrote {Path(args.out) / 'long.npz'} and {Path(args.out) / 'long.json'}")
        return 0

    return guarded("attnviz long", body, (ValueError, ModelLoadError, OSError))


def write(long: LongAttention, out: Path, size: int) -> None:
    """Every head's overview and received weights into out/long.npz, the rest into out/long.json."""
    edges = block_edges(long.n, size)
    b = len(edges) - 1
    overview = np.zeros((long.layers, long.heads, b, b), dtype=np.float32)
    received = np.zeros((long.layers, long.heads, long.n), dtype=np.float32)
    for layer in range(long.layers):
        for head in range(long.heads):
            overview[layer, head], received[layer, head] = long.summary(layer, head, size)
            _say(f"heads: {layer * long.heads + head + 1}/{long.layers * long.heads}")
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "long.npz", overview=overview, received=received, edges=edges)
    top = np.argsort(-received, axis=-1)[..., :5]
    doc = {
        "model": long.model,
        "n": long.n,
        "layers": long.layers,
        "heads": long.heads,
        "causal": long.causal,
        "kv_heads": long.kv_heads.tolist(),
        "truncated": long.truncated,
        "n_input_tokens": long.n_input_tokens,
        "tokens": long.tokens,
        "edges": edges.tolist(),
        "most_received": top.tolist(),
    }
    (out / "long.json").write_text(json.dumps(doc, ensure_ascii=True), encoding="utf-8")
