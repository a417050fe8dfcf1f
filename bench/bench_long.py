"""Attention at any length (issue 20): `attend_long` at 2,048 / 4,096 / 8,192 tokens.

    .venv/bin/python bench/bench_long.py --model smollm2 --sizes 2048 4096 8192
    .venv/bin/python bench/bench_long.py --model scratch --sizes 2048 --device cuda   # the GPU row

Each size runs in a fresh interpreter, so its peak resident memory is its own. Columns: the
forward (SDPA, queries and keys kept), the first overview (one head, 256 x 256 block means over
the whole map), a zoomed tile (64 x 64 at full resolution: 64 exact rows), the weight each token
receives (one head), the process's peak RSS and what the model alone takes, beside the float32
maps eager attention would return for every head. `scratch` is the from-scratch encoder with
MiniLM's shape (6 x 12, untrained, sinusoidal positions for any length).
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one(model_name: str, n: int, device: str, threads: int) -> dict[str, object]:
    """One size in this process: load, tokenise, then the timed steps."""
    import torch

    import attnviz
    from attnviz.long import attend_long, estimate, scratch_model
    from attnviz.long.run import encode_long

    torch.set_num_threads(threads)
    if model_name == "scratch":
        model = scratch_model(max(n, 8192))
        if device != "cpu":
            model.encoder.to(device)
            model.device = torch.device(device)
    else:
        model = attnviz.load_model(model_name, device=device)
    words = (ROOT / "README.md").read_text(encoding="utf-8").split()
    text = " ".join(words[i % len(words)] for i in range(n * 2))
    encode_long(model, text, n)
    loaded = _peak_mb()
    t0 = time.perf_counter()
    long = attend_long(model, text, max_tokens=n)
    t1 = time.perf_counter()
    long.overview(long.layers // 2, 0)
    t2 = time.perf_counter()
    mid = long.n // 2
    long.tile(long.layers // 2, 0, slice(mid, mid + 64), slice(mid - 32, mid + 32))
    t3 = time.perf_counter()
    long.received(long.layers - 1, 0)
    t4 = time.perf_counter()
    est = estimate(model, long.n)
    return {
        "n": long.n,
        "forward_s": t1 - t0,
        "overview_s": t2 - t1,
        "tile_s": t3 - t2,
        "received_s": t4 - t3,
        "peak_mb": _peak_mb(),
        "loaded_mb": loaded,
        "kept_mb": est.kept_bytes / 2**20,
        "eager_gb": est.full_bytes / 2**30,
        "shape": f"{long.layers} x {long.heads} (kv {int(long.kv_heads.max()) + 1})",
        "device": str(model.device),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2", help="smollm2 (default), scratch, minilm, ...")
    p.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096, 8192])
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        print(json.dumps(one(args.model, args.sizes[0], args.device, args.threads)))
        return 0
    import torch

    print(f"model: {args.model}, device: {args.device} ({args.threads} threads), torch {torch.__version__}, ")
    print(f"{platform.machine()}, {platform.python_version()}\n")
    print("| tokens | model | forward (s) | first overview (s) | zoomed tile (s) | received (s) |", end="")
    print(" peak RSS (MB) | model loaded (MB) | kept q/k (MB) | eager maps (GB) |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        cmd = [sys.executable, __file__, "--one", "--model", args.model, "--sizes", str(n)]
        cmd += ["--device", args.device, "--threads", str(args.threads)]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
        if done.returncode != 0:
            print(f"| {n} | failed: {done.stderr.strip().splitlines()[-1][:200] if done.stderr.strip() else '?'} |")
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"| {r['n']:,} | {args.model} {r['shape']} | {r['forward_s']:.2f} | {r['overview_s']:.2f} | "
            f"{r['tile_s']:.3f} | {r['received_s']:.2f} | {r['peak_mb']:.0f} | {r['loaded_mb']:.0f} | "
            f"{r['kept_mb']:.0f} | {r['eager_gb']:.1f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
