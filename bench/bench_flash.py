"""SDPA against eager attention as n grows (issue 22, item 2): time and peak memory.

    .venv/bin/python bench/bench_flash.py --sizes 512 1024 2048 4096
    .venv/bin/python bench/bench_flash.py --sizes 512 1024 2048 --out assets/flash_bench.json

Eager = softmax(Q K^T / sqrt(d)) V written out (the n x n weights exist); SDPA = torch's
scaled_dot_product_attention (on the CPU its flash kernel: tiles, no n x n matrix). One batch of
8 heads of width 64, float32, causal. Each (method, n) runs in a fresh interpreter, so its peak
resident memory is its own; "grew" is the peak over the RSS before the attention ran. Both do the
same n^2 d arithmetic: what SDPA saves is memory (and, on a GPU, the traffic to it).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

HEADS, WIDTH = 8, 64


def one(method: str, n: int, threads: int, repeat: int) -> dict[str, float]:
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, HEADS, n, WIDTH) for _ in range(3))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def eager() -> torch.Tensor:
        s = (q @ k.transpose(-2, -1)) * WIDTH**-0.5
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        return torch.softmax(s, dim=-1) @ v

    def sdpa() -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    run = eager if method == "eager" else sdpa
    times = []
    with torch.inference_mode():
        for _ in range(repeat):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before
    return {"n": n, "s": sorted(times)[len(times) // 2], "grew_mb": grew}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[512, 1024, 2048, 4096])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", help="also write the rows as JSON here (the lab page reads assets/flash_bench.json)")
    p.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]), args.threads, args.repeat)))
        return 0
    print(f"{HEADS} heads x width {WIDTH}, float32, causal, CPU ({args.threads} threads), median of {args.repeat}\n")
    print("| tokens | eager (s) | SDPA (s) | eager peak grew (MB) | SDPA peak grew (MB) | n x n weights (MB) |")
    print("|---:|---:|---:|---:|---:|---:|")
    rows: list[dict[str, float]] = []
    for n in args.sizes:
        got = {}
        for method in ("eager", "sdpa"):
            cmd = [sys.executable, __file__, "--one", method, str(n), "--threads", str(args.threads)]
            done = subprocess.run([*cmd, "--repeat", str(args.repeat)], capture_output=True, text=True, check=False)
            got[method] = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
        e, s = got["eager"], got["sdpa"]
        if e is None or s is None:
            print(f"| {n:,} | failed | | | | |")
            continue
        weights = HEADS * n * n * 4 / 2**20
        rows.append({"n": n, "eager_s": e["s"], "sdpa_s": s["s"], "eager_mb": e["grew_mb"], "sdpa_mb": s["grew_mb"],
                     "weights_mb": weights})  # fmt: skip
        print(
            f"| {n:,} | {e['s']:.3f} | {s['s']:.3f} | {e['grew_mb']:.0f} | {s['grew_mb']:.0f} | {weights:.0f} |",
            flush=True,
        )
    if args.out:
        setup = {"heads": HEADS, "width": WIDTH, "dtype": "float32", "causal": True, "threads": args.threads,
                 "repeat": args.repeat, "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}  # fmt: skip
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"setup": setup, "rows": rows}, fh, indent=1)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
