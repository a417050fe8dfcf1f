"""What the numpy first map buys a cold server: the explorer's first chart with the first map
(app/coldstart/first_map.py, MiniLM in numpy before torch is imported) and without it (the
explorer's own map, from torch, comes first), side by side in one process, alternating.

    .venv/bin/python bench/bench_coldstart.py                      # 4 cold starts each way
    .venv/bin/python bench/bench_coldstart.py --rounds 6 --out bench/results_coldstart.md

Each cold start launches `streamlit run bench/coldstart_entry.py` (app.py; the entry switches
the first map off with ATTNVIZ_BENCH_FIRST_MAP=0) on a free loopback port, opens the explorer in
a new context of one Chromium as soon as /_stcore/health answers, and records (seconds from the
launch): the sentence box drawn, the first chart drawn (either map), the explorer's own heatmap
drawn, every explorer chart drawn (heatmap and grid), and the server's RSS peak (process and
children, 0.2 s samples) until then.

With --engines N, also N fresh interpreters each way, alternating: the embedded MiniLM loaded and
its first `attend` through the quick encoder (models/minilm_quick.py: `tokenizers` and the
scratch encoder, no transformers) and through transformers' BertModel (`_load_hf`, what the
quick runner hands over to on first need); the interpreter's wall and CPU seconds from start to
the answer. Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench_browser import VIEWS, VIEWS_DRAWN_JS, RSSSampler  # noqa: E402

from tests.browser import ARTIFACTS, FULL, _stop, browser, free_port, wait_healthy  # noqa: E402

# First appearance (Date.now() ms) of each mark, kept in window.__marks.
MARKS_JS = """
(() => {
  const marks = {}; window.__marks = marks;
  const probes = {
    box: '.st-key-sentence_input textarea',
    chart: '[data-attnviz-map][data-drawn], [data-testid="stPlotlyChart"] .js-plotly-plot .main-svg',
    first_map: '.st-key-first_map [data-attnviz-map][data-drawn]',
    own_map: '.st-key-view_heatmap [data-attnviz-map][data-drawn], .st-key-view_heatmap .js-plotly-plot .main-svg',
  };
  const check = () => {
    for (const [name, sel] of Object.entries(probes))
      if (marks[name] === undefined && document.querySelector(sel)) marks[name] = Date.now();
  };
  new MutationObserver(check).observe(document, {childList: true, subtree: true, attributes: true});
  check();
})();
"""
ENGINE_PY = """
import os, sys, time, resource
t0 = time.perf_counter()
sys.path.insert(0, os.getcwd())
from attnviz.models import loading
if sys.argv[1] == "quick":
    runner = loading.load_model("minilm", device="cpu")
else:
    import torch
    runner = loading._load_hf(str(loading.embedded_model_dir()), torch.device("cpu"), 512, "minilm")
att = runner.attend("The animal didn't cross the street because it was tired.")
usage = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - t0, usage.ru_utime + usage.ru_stime, "transformers" in sys.modules)
"""
MEASURES = ("health", "box", "chart", "first_map", "own_map", "views", "peak_mb")


def cold_start(b: Any, first_map: bool, timeout_s: float) -> dict[str, float | None]:
    port = free_port()
    env = {**os.environ, "ATTNVIZ_BENCH_FIRST_MAP": "1" if first_map else "0"}
    cmd = [sys.executable, "-m", "streamlit", "run", "bench/coldstart_entry.py", "--server.headless=true",
           f"--server.port={port}", "--server.address=127.0.0.1", "--browser.gatherUsageStats=false"]  # fmt: skip
    ARTIFACTS.mkdir(exist_ok=True)
    url = f"http://127.0.0.1:{port}"
    out: dict[str, float | None] = {}
    with (ARTIFACTS / f"streamlit-{port}.log").open("wb") as log:
        t0 = time.time()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    sampler = RSSSampler(proc.pid).start()
    ctx = b.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
    try:
        wait_healthy(url, proc)
        out["health"] = time.time() - t0
        ctx.add_init_script(MARKS_JS)
        page = ctx.new_page()
        page.goto(url, wait_until="commit")
        page.wait_for_function(VIEWS_DRAWN_JS, arg=list(VIEWS), timeout=timeout_s * 1000, polling=50)
        out["views"] = time.time() - t0
        marks = page.evaluate("() => window.__marks")
        for name in ("box", "chart", "first_map", "own_map"):
            out[name] = None if marks.get(name) is None else marks[name] / 1000 - t0
    finally:
        ctx.close()
        sampler.stop()
        out["peak_mb"] = sampler.peak_mb()
        _stop(proc)
    return out


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("ATTNVIZ_CHROMIUM", FULL)  # what a person's browser does, not the tests' shell
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=4, help="cold starts each way, alternating")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for every chart")
    ap.add_argument("--out", type=Path, help="append the markdown table (with the command) here")
    ap.add_argument("--engines", type=int, default=0, help="fresh interpreters each way: quick encoder vs transformers")
    args = ap.parse_args(argv)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    runs: dict[bool, list[dict[str, float | None]]] = {True: [], False: []}
    with browser() as b:
        for i in range(args.rounds):
            for first_map in (True, False) if i % 2 == 0 else (False, True):
                runs[first_map].append(cold_start(b, first_map, args.timeout))
                shown = {k: None if v is None else round(v, 2) for k, v in runs[first_map][-1].items()}
                print("with" if first_map else "without", shown, flush=True)

    def cell(first_map: bool, key: str, since: str | None = None) -> str:
        """Median (each run): the mark `key`, from the launch or from the mark `since`."""
        values = [
            None if r.get(key) is None or (since and r.get(since) is None) else r[key] - (r[since] if since else 0)  # type: ignore[operator]
            for r in runs[first_map]
        ]
        got = [v for v in values if v is not None]
        digits = 0 if key == "peak_mb" else 1
        each = " ".join("—" if v is None else f"{v:.{digits}f}" for v in values)
        return f"{statistics.median(got):.{2 * digits}f} ({each})" if got else "—"

    names = {
        "health": "server healthy, s",
        "box": "sentence box drawn, s",
        "chart": "**first chart drawn**, s",
        "first_map": "the first map (numpy) drawn, s",
        "own_map": "the explorer's own map (torch) drawn, s",
        "views": "every explorer chart drawn, s",
        "peak_mb": "server RSS peak until then, MB",
    }
    command = shlex.join(
        [".venv/bin/python", "bench/bench_coldstart.py", *(argv if argv is not None else sys.argv[1:])]
    )
    lines = [
        f"### `{command}`",
        "",
        f"Recorded {time.strftime('%Y-%m-%d %H:%M')}; {os.cpu_count()} CPUs, load average {load} at the start, "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end. Seconds from launching the server; "
        "median (each run, in order).",
        "",
        "| measure | with the first map | without |",
        "|---|---|---|",
        *(f"| {names[k]} | {cell(True, k)} | {cell(False, k)} |" for k in MEASURES),
    ]
    for key, label in (
        ("chart", "box to first chart"),
        ("own_map", "box to the explorer's own map"),
        ("views", "box to every explorer chart"),
    ):
        lines.append(f"| {label}, s | {cell(True, key, 'box')} | {cell(False, key, 'box')} |")
    if args.engines:
        lines += ["", *engines(args.engines)]
    report = "\n".join(lines) + "\n"
    print()
    print(report)
    if args.out:
        args.out.write_text((args.out.read_text() + "\n" if args.out.exists() else "") + report)
    return 0


def engines(rounds: int) -> list[str]:
    """The embedded MiniLM's first answer in a fresh interpreter: quick encoder vs transformers."""
    got: dict[str, list[tuple[float, float, str]]] = {"quick": [], "transformers": []}
    for i in range(rounds):
        for way in ("quick", "transformers") if i % 2 == 0 else ("transformers", "quick"):
            env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
            done = subprocess.run([sys.executable, "-c", ENGINE_PY, way], cwd=ROOT, env=env, capture_output=True,
                                  text=True, check=True, timeout=600)  # fmt: skip
            wall, cpu, imported = done.stdout.split()
            got[way].append((float(wall), float(cpu), imported))
            print(way, got[way][-1], flush=True)

    def cell(way: str, i: int) -> str:
        values = [r[i] for r in got[way]]
        return f"{statistics.median(values):.2f} ({' '.join(f'{v:.1f}' for v in values)})"  # type: ignore[arg-type]

    return [
        "| a fresh interpreter: MiniLM loaded and its first `attend` | quick encoder | transformers |",
        "|---|---|---|",
        f"| wall s, median (each) | {cell('quick', 0)} | {cell('transformers', 0)} |",
        f"| CPU s, median (each) | {cell('quick', 1)} | {cell('transformers', 1)} |",
        f"| transformers imported | {got['quick'][0][2]} | {got['transformers'][0][2]} |",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
