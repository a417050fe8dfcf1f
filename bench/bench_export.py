"""How big and how fast is a full export (all layers x heads) of the embedded model?

    .venv/bin/python bench/bench_export.py                    # 16, 128, 512 tokens
    .venv/bin/python bench/bench_export.py --sizes 16         # smoke test, seconds

"JSON before" is what `--json` wrote until the compact format: `json.dumps` of
`weights.round(6).tolist()` (float32 rounded in float32, so most numbers came out as 17-digit
doubles). "JSON now" is `export.weights_json`, the bytes `python -m attnviz TEXT --json OUT`
writes: at most 6 significant digits a number, built in numpy. NPZ is `export.attention_npz`
(float32, zip-deflated). Times are the best of --repeat runs; "max rel err" is the largest
|read back - weight| / weight over the non-zero weights after `json.loads`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import attnviz
from attnviz.export import attention_npz, weights_json

SENTENCE = (
    "The animal didn't cross the street because it was tired. I deposited money in the bank, "
    "then sat by the river bank while the dog bit the man and the man bit the dog. "
)


def text_of(model: Any, n: int) -> attnviz.Attention:
    """An Attention of exactly n tokens (specials included): a long text cut at n."""
    att: attnviz.Attention = model.attend(SENTENCE * (n // 8 + 2), max_tokens=n)
    if att.n != n:
        raise SystemExit(f"asked for {n} tokens, the model gave {att.n} (its limit?)")
    return att


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def json_before(att: attnviz.Attention) -> bytes:
    doc = {
        "model": att.model,
        "device": att.device,
        "tokens": att.tokens,
        "truncated": att.truncated,
        "weights": att.weights.round(6).tolist(),
    }
    return json.dumps(doc, ensure_ascii=False).encode("utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[16, 128, 512])
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args(argv)
    model = attnviz.load_model("minilm", device="cpu")
    import torch

    print(
        f"device: cpu ({torch.get_num_threads()} threads), {platform.machine()}, numpy {np.__version__}, "
        f"best of {args.repeat}"
    )
    print()
    print(
        "| tokens | numbers | JSON before (MB) | before (s) | JSON now (MB) | now (s) | now/before size "
        "| max rel err | NPZ (MB) | NPZ (s) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        att = text_of(model, n)
        before_s, before = best_of(args.repeat, lambda att=att: json_before(att))
        now_s, now = best_of(args.repeat, lambda att=att: weights_json(att))
        npz_s, npz = best_of(args.repeat, lambda att=att: attention_npz(att))
        back = np.asarray(json.loads(now)["weights"], dtype=np.float64)
        w = att.weights.astype(np.float64)
        nz = w != 0
        rel = float(np.max(np.abs(back[nz] - w[nz]) / w[nz]))
        print(
            f"| {n} | {att.weights.size:,} | {len(before) / 1e6:.2f} | {before_s:.2f} | {len(now) / 1e6:.2f} "
            f"| {now_s:.2f} | {len(now) / len(before):.2f} | {rel:.1e} | {len(npz) / 1e6:.2f} | {npz_s:.2f} |"
        )
        del before, now, npz, back
    return 0


if __name__ == "__main__":
    sys.exit(main())
