"""Where the explorer's time goes at 512 tokens (issue 24): the parts of one Ctrl+Enter, in process.

    .venv/bin/python bench/bench_explorer.py                   # 512 tokens, 3 texts, median
    .venv/bin/python bench/bench_explorer.py --tokens 32 --repeats 1   # a quick smoke run

Each repeat takes a new text of exactly n tokens (bench_browser.texts_of_exactly), so nothing
comes from a cache. Parts, each timed on its own: the forward pass (`attend`), what the explorer
computes beside it (the sinks switch's norm-based weights and sink scores), each view's figure,
its lines made path shapes (app/redraw.py, as the explorer sends it), and each figure's
serialisation as Streamlit does it (`plotly.io.to_json(fig, validate=False)`,
whose bytes go over the websocket). Then the whole explorer page as the server runs it
(Streamlit's AppTest: script, widgets and protobuf, no browser), so what the parts leave out
shows. What happens in the browser (websocket, parsing, Plotly drawing) is measured by
bench/bench_browser.py (each view's websocket message, its Plotly calls and the browser's long
tasks per run; bench/breakdown.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def parts(texts: list[str], n: int) -> dict[str, list[float]]:
    import plotly.io as pio

    import attnviz
    from attnviz import explain, views
    from attnviz.app.redraw import lines_as_shapes
    from attnviz.app.sections.explorer import THUMB

    model = attnviz.load_model("minilm", device="cpu")
    model.attend("warm up", n)
    out: dict[str, list[float]] = {}

    def add(name: str, seconds: float) -> None:
        out.setdefault(name, []).append(seconds)

    for text in texts:
        s, att = _timed(lambda text=text: model.attend(text, n))
        add("forward (attend)", s)
        fitted = model.fit(text, n)
        s, norms = _timed(lambda fitted=fitted: explain.norm_weights(model, fitted))
        add("sinks switch: norm-based weights (a second forward)", s)
        s, _ = _timed(lambda att=att, norms=norms: explain.sink_scores(att, norms=norms))
        add("sinks switch: sink scores", s)
        figs = {
            "heatmap": lambda att=att: views.heatmap(att, 0, 0, zmax=1.0),
            "model view (grid)": lambda att=att: views.model_view(att, focus=(0, 0), thumb=THUMB),
            "head view": lambda att=att: views.head_view(att, 0, heads=[0]),
            "graph view": lambda att=att: views.graph_view(att, 0, 0, threshold=0.1),
            "token focus": lambda att=att: views.token_focus(att, 1, 0, top=12),
        }
        for name, build in figs.items():
            s, fig = _timed(build)
            add(f"figure: {name}", s)
            s, sent = _timed(lambda fig=fig: lines_as_shapes(fig))  # as the explorer sends it
            add(f"lines as shapes: {name}", s)
            s, js = _timed(lambda sent=sent: pio.to_json(sent, validate=False))
            add(f"to_json: {name}", s)
            add(f"MB: {name}", len(js) / 1e6)
    return out


def page(texts: list[str], timeout: float) -> list[float]:
    """The explorer page as the server runs it, per new text (AppTest: no browser)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "tests" / "app_entry.py"), default_timeout=timeout)
    at.run()  # loads the model and analyses the default sentence
    times = []
    for text in texts:
        at.text_area(key="sentence_input").set_value(text)
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
        if at.exception:
            raise SystemExit(f"the page failed: {[e.value for e in at.exception]}")
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3, help="texts (each a new one; median reported)")
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args(argv)

    import torch
    from bench_browser import texts_of_exactly

    texts = texts_of_exactly(args.tokens, 2 * args.repeats)
    measured = parts(texts[: args.repeats], args.tokens)
    whole = page(texts[args.repeats :], args.timeout)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{args.tokens} tokens, median of {args.repeats} new texts; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; load average {load}\n")  # fmt: skip
    print("| part | median | each |\n|---|---:|---|")
    for name, values in measured.items():
        unit = "MB" if name.startswith("MB") else "s"
        each = ", ".join(f"{v:.3f}" for v in values)
        print(f"| {name} | {statistics.median(values):.3f} {unit} | {each} |")
    total = sum(
        statistics.median(v) for k, v in measured.items() if not (k.startswith("MB") or k.endswith("token focus"))
    )
    print(f"| sum of the parts above (without token focus and sizes) | {total:.3f} s | |")
    each = ", ".join(f"{v:.3f}" for v in whole)
    print(f"| **whole explorer page on the server** (AppTest, new text) | {statistics.median(whole):.3f} s | {each} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
