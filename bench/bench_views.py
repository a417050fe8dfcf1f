"""How big and how fast are the explorer's figures, next to bertviz's model view?

    .venv/bin/python bench/bench_views.py                      # 16, 128, 512 tokens + bertviz
    .venv/bin/python bench/bench_views.py --sizes 16 --skip-bertviz   # CI smoke test, seconds
    .venv/bin/python bench/bench_views.py --sweep                    # cost against n = 16 .. 512

One explorer selection is what a page shows for one (layer, head): the focused head's heatmap
at full resolution, the model-view grid, the head view of its layer and the graph view of the
head. "Our MB" is the summed `len(fig.to_json())`, which is what `st.plotly_chart` sends;
"our s" includes building and serialising. bertviz is timed on
`model_view(attention, tokens, html_action="return")` with the same weights. The budgets
(issue 5, tightened by the views restructure): at most 0.3 / 1.5 / 3 MB at 16 / 128 / 512
tokens, and at least 20x / 50x faster than bertviz at 128 / 512 tokens.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


import attnviz
from attnviz import views

BUDGET_MB = {16: 0.3, 128: 1.5, 512: 3.0}
BUDGET_SPEEDUP = {128: 20.0, 512: 50.0}
FOCUS = (2, 3)  # (layer, head) the explorer has selected
SENTENCE = (
    "The animal didn't cross the street because it was tired. I deposited money in the bank, "
    "then sat by the river bank while the dog bit the man and the man bit the dog. "
)


def text_of(model: attnviz.PretrainedModel, n: int) -> attnviz.Attention:
    """An Attention of exactly n tokens (specials included): a long text cut at n."""
    att = model.attend(SENTENCE * (n // 8 + 2), max_tokens=n)
    if att.n != n:
        raise SystemExit(f"asked for {n} tokens, the model gave {att.n} (its limit?)")
    return att


def explorer_figures(att: attnviz.Attention) -> list[Any]:
    layer, head = FOCUS
    return [
        views.heatmap(att, layer, head),
        views.model_view(att, focus=FOCUS),
        views.head_view(att, layer),
        views.graph_view(att, layer, head),
    ]


def ours(att: attnviz.Attention, repeat: int = 3) -> tuple[float, float]:
    """(MB of JSON, best seconds to build and serialise the four figures)."""
    best, size = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        size = sum(len(fig.to_json()) for fig in explorer_figures(att))
        best = min(best, time.perf_counter() - start)
    return size / 1e6, best


def bertviz_model_view(att: attnviz.Attention) -> tuple[float, float]:
    """(MB of HTML, seconds) of bertviz's model view on the same weights."""
    import torch
    from bertviz import model_view

    attention = tuple(torch.from_numpy(att.weights[layer][None]) for layer in range(att.n_layers))  # (1, H, n, n) each
    start = time.perf_counter()
    html = model_view(attention, list(att.tokens), html_action="return")
    seconds = time.perf_counter() - start
    return len(html.data) / 1e6, seconds


class PeakRSS:
    """Peak growth of the resident set size while the block runs, sampled every millisecond.

    RSS, not tracemalloc, for the forward pass: torch's CPU allocator is invisible to tracemalloc.
    Memory freed earlier and reused does not show as growth, so this is a lower bound.
    """

    def __init__(self) -> None:
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.peak = 0
        self.mb = 0.0
        self._stop = threading.Event()

    def _rss(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self.page

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss())
            time.sleep(0.001)

    def __enter__(self) -> PeakRSS:
        self.base = self.peak = self._rss()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())
        self.mb = (self.peak - self.base) / 1e6


def device_line(model: attnviz.PretrainedModel) -> str:
    import torch

    return f"{model.device}, torch {torch.__version__}, {os.cpu_count()} CPUs, {platform.machine()}"


def compare(sizes: list[int], skip_bertviz: bool) -> tuple[str, bool]:
    model = attnviz.load_model("minilm", device="cpu")
    device = str(model.device)
    lines = [
        "| n | our MB | our s | bertviz MB | bertviz s | size ratio | speed ratio | budget | device |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    ok = True
    for n in sizes:
        att = text_of(model, n)
        ours(att, repeat=1)  # warm up imports and caches
        mb, seconds = ours(att)
        verdict = []
        if n in BUDGET_MB:
            verdict.append(f"{'ok' if mb <= BUDGET_MB[n] else 'OVER'} <= {BUDGET_MB[n]} MB")
            ok &= mb <= BUDGET_MB[n]
        row = f"| {n} | {mb:.3f} | {seconds:.3f} |"
        if skip_bertviz:
            row += " - | - | - | - |"
        else:
            bmb, bseconds = bertviz_model_view(att)
            speedup = bseconds / seconds
            if n in BUDGET_SPEEDUP:
                verdict.append(f"{'ok' if speedup >= BUDGET_SPEEDUP[n] else 'SLOW'} >= {BUDGET_SPEEDUP[n]:g}x")
                ok &= speedup >= BUDGET_SPEEDUP[n]
            row += f" {bmb:.1f} | {bseconds:.2f} | {bmb / mb:.0f}x smaller | {_ratio(speedup)} |"
        lines.append(f"{row} {', '.join(verdict) or '-'} | {device} |")
        print(lines[-1], flush=True)
    note = f"\n{device_line(model)}; our s = best of 3; bertviz run once.\n"
    return "\n".join(lines) + "\n" + note, ok


def best_of(repeat: int, work: Callable[[], object]) -> float:
    """Fastest of `repeat` runs: other processes on a shared machine only ever add time."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def sweep(sizes: list[int]) -> str:
    model = attnviz.load_model("minilm", device="cpu")
    text_of(model, 16)  # warm up
    explorer_figures(text_of(model, 16))
    lines = [
        "| n | numbers (L*H*n*n) | weights MB | forward s | forward peak MB | figures s | figures peak MB | JSON MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = []
    for n in sizes:
        with PeakRSS() as fwd_mem:
            att = text_of(model, n)
        forward_s = best_of(3, lambda n=n: text_of(model, n))
        json_mb = sum(len(fig.to_json()) for fig in explorer_figures(att)) / 1e6
        figures_s = best_of(3, lambda att=att: [fig.to_json() for fig in explorer_figures(att)])
        tracemalloc.start()  # numpy and Python allocations are traced; a second, untimed build
        sum(len(fig.to_json()) for fig in explorer_figures(att))
        figures_mb = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
        numbers = att.weights.size
        lines.append(
            f"| {n} | {numbers:,} | {att.weights.nbytes / 1e6:.1f} | {forward_s:.3f} | {fwd_mem.mb:.1f} |"
            f" {figures_s:.3f} | {figures_mb:.1f} | {json_mb:.3f} |"
        )
        print(lines[-1], flush=True)
        rows.append({"n": n, "forward_s": forward_s, "figures_s": figures_s, "mb": att.weights.nbytes / 1e6})
    views.cost_sweep(rows)  # the cost panel's figure builds from these rows
    note = (
        f"\n{device_line(model)}. Times are the best of 3. forward = tokenise + model + weights to "
        "numpy; figures = the four explorer figures built and serialised; forward peak MB = growth of "
        "resident memory while it ran (torch's allocator is invisible to tracemalloc); figures peak "
        "MB = tracemalloc peak.\n"
    )
    return "\n".join(lines) + "\n" + note


def _ratio(speedup: float) -> str:
    """'14x faster', or '0.3x (slower)' where the reference wins (tiny inputs)."""
    return f"{speedup:.0f}x faster" if speedup >= 1.5 else f"{speedup:.1f}x" + (" (slower)" if speedup < 1 else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="token counts (default 16 128 512)")
    parser.add_argument("--skip-bertviz", action="store_true", help="time our figures only")
    parser.add_argument("--sweep", action="store_true", help="forward and figure cost for n = 16 .. 512")
    parser.add_argument("--out", type=Path, help="also write the markdown table to this file")
    args = parser.parse_args(argv)
    if args.sweep:
        table, ok = sweep(args.sizes or [16, 32, 64, 128, 256, 512]), True
    else:
        table, ok = compare(args.sizes or [16, 128, 512], args.skip_bertviz)
    print(table)
    if args.out:
        command = "python bench/bench_views.py " + " ".join(argv if argv is not None else sys.argv[1:])
        args.out.write_text(f"`{command}`\n\n{table}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
