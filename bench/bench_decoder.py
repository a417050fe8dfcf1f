"""What SmolLM2 (the embedded decoder) costs: warm load, memory, and `attend` next to a plain
transformers eager forward.

    .venv/bin/python bench/bench_decoder.py [--tokens 128] [--repeat 5] [--loads 3] [--out FILE]

- warm load: `attnviz.load_model("smollm2")` in a fresh process, the float32 cache already
  filled (the first call fills it); the time of the call alone, and of the whole process
  (imports included). Goal: <= 5 s for the call.
- peak RSS of that process after the load, and after one attend (goal of issue 19: a server with MiniLM and SmolLM2
  loaded <= 1.6 GB).
- `attend` at --tokens tokens against the same base model's plain forward with
  output_attentions=True (eager), both under inference mode, alternating: best and median of --repeat runs each,
  and the ratio of the bests (goal: <= 1.5).
- the all-heads grid of SmolLM2's 270 heads at --tokens tokens as the explorer sends it
  (`len(fig.to_json())`, thumbnails from views.decoder.grid_thumb, group outlines on; goal of
  the explorer's budget: <= 1.5 MB), and at the 32 x 32 thumbnails of a 72-head model.
- peak RSS of a new process holding MiniLM and SmolLM2 (both loaded, each having run
  `attend` at --tokens tokens, SmolLM2's next word and grid figure built; goal <= 1.6 GB).
Prints a markdown table and writes it, with the command, to --out (bench/results_decoder.md).
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import attnviz  # noqa: E402
from attnviz.models.smollm2 import ensure_cache  # noqa: E402
from bench.bench_explain import cpu_name  # noqa: E402

TEXT = (
    "The animal didn't cross the street because it was tired. I deposited money in the bank, "
    "then sat by the river bank and watched the water; unbelievably, nobody else came. "
)
LOAD = """
import json, resource, time
t0 = time.perf_counter()
import attnviz
t1 = time.perf_counter()
model = attnviz.load_model("smollm2", device="cpu")
t2 = time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
model.attend("The capital of France is Paris. " * 16)
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "rss_mb": rss,
                  "rss_attend_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

BOTH = """
import json, resource, sys
import attnviz
from attnviz import views
from attnviz.views import decoder as dv
tokens, text = int(sys.argv[1]), sys.argv[2]
for name in ("minilm", "smollm2"):
    model = attnviz.load_model(name, device="cpu")
    att = model.attend(model.fit(text, tokens))
fig = dv.mark_groups(views.model_view(att, thumb=dv.grid_thumb(att)), att)
attnviz.predict(model, att.text, k=10)
print(json.dumps({"rss_both_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "grid_mb": len(fig.to_json()) / 1e6}))
"""


def both_loaded(tokens: int) -> dict[str, float]:
    """Peak RSS of a new process with MiniLM and SmolLM2 loaded and used (see the docstring)."""
    out = subprocess.run(
        [sys.executable, "-c", BOTH, str(tokens), TEXT * 20], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def grid_payload(att: attnviz.Attention) -> tuple[int, float, float]:
    """(thumbnail, MB of the explorer's grid figure, MB at 32 x 32 thumbnails)."""
    from attnviz import views
    from attnviz.views import decoder as dv

    thumb = dv.grid_thumb(att)
    sent = dv.mark_groups(views.model_view(att, focus=(0, 0), thumb=thumb), att)
    full = dv.mark_groups(views.model_view(att, focus=(0, 0), thumb=32), att)
    return thumb, len(sent.to_json()) / 1e6, len(full.to_json()) / 1e6


def warm_load() -> dict[str, float]:
    ensure_cache()  # the cold conversion is not what is measured
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", LOAD], capture_output=True, text=True, check=True, cwd=ROOT)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["process_s"] = time.perf_counter() - t
    return row


def timed_pair(first: Callable[[], object], second: Callable[[], object], repeat: int) -> list[tuple[float, float]]:
    """(best, median) seconds of each, runs alternating so a shared machine's load falls on both."""
    times: list[list[float]] = [[], []]
    for _ in range(repeat):
        for k, fn in enumerate((first, second)):
            t = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t)
    return [(min(ts), statistics.median(ts)) for ts in times]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--loads", type=int, default=3)
    p.add_argument("--out", default=str(ROOT / "bench" / "results_decoder.md"))
    args = p.parse_args()
    loads = [warm_load() for _ in range(args.loads)]
    model = attnviz.load_model("smollm2", device="cpu")
    assert isinstance(model, attnviz.PretrainedModel)
    text = model.fit(TEXT * 20, args.tokens)
    enc = model.encode(text)
    n = int(enc.inputs["input_ids"].shape[1])

    def plain() -> None:
        with torch.inference_mode():
            out = model.hf_model(**enc.inputs, output_attentions=True)
            torch.stack([a[0] for a in out.attentions]).numpy()

    plain()
    model.attend(text)
    eager, attend = timed_pair(plain, lambda: model.attend(text), args.repeat)
    thumb, grid_mb, grid_32_mb = grid_payload(model.attend(text))
    both = both_loaded(args.tokens)
    load_best = min(r["load_s"] for r in loads)
    rows = [
        "| measure | best | median | goal |",
        "|---|---|---|---|",
        f"| warm load_model('smollm2') in a new process (s) | {load_best:.2f} | "
        f"{statistics.median(r['load_s'] for r in loads):.2f} | <= 5 |",
        f"| whole new process: python + import attnviz + load (s) | {min(r['process_s'] for r in loads):.2f} | "
        f"{statistics.median(r['process_s'] for r in loads):.2f} | |",
        f"| RSS after the load (MB) | {min(r['rss_mb'] for r in loads):.0f} | "
        f"{statistics.median(r['rss_mb'] for r in loads):.0f} | |",
        f"| peak RSS after one attend of 16 short sentences (MB) | {min(r['rss_attend_mb'] for r in loads):.0f} | "
        f"{statistics.median(r['rss_attend_mb'] for r in loads):.0f} | |",
        f"| transformers eager forward, {n} tokens (s) | {eager[0]:.3f} | {eager[1]:.3f} | |",
        f"| attend, {n} tokens (s) | {attend[0]:.3f} | {attend[1]:.3f} | |",
        f"| attend / eager (best) | {attend[0] / eager[0]:.2f} | {attend[1] / eager[1]:.2f} | <= 1.5 |",
        f"| all-heads grid, 270 heads, {n} tokens, {thumb} x {thumb} thumbnails (MB of JSON) | {grid_mb:.2f} | | <= 1.5 |",
        f"| the same grid at 32 x 32 thumbnails (MB of JSON) | {grid_32_mb:.2f} | | |",
        f"| peak RSS, MiniLM + SmolLM2 loaded, attend + next word + grid (MB) | {both['rss_both_mb']:.0f} | | <= 1600 |",
    ]
    command = "python bench/bench_decoder.py " + shlex.join(sys.argv[1:])
    head = f"`{command}` on {cpu_name()}, torch {torch.__version__}, {torch.get_num_threads()} threads\n\n"
    table = "\n".join(rows)
    print(head + table)
    Path(args.out).write_text("# SmolLM2 costs\n\n" + head + table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
