"""What one page load costs the browser, page by page (issue 24.5): Chromium's CPU-s for a first
visit (a new browser context, as each browser test opens) until the page is idle with its charts
drawn, against one warm server. Run it on two checkouts in turn to compare them
(bench/README.md: issue 24, eighth pass).

    .venv/bin/python bench/bench_pageload.py                 # every page, 3 loads each
    .venv/bin/python bench/bench_pageload.py --pages '' lab --loads 5

The CPU is exact, not sampled (tests/cputime.py: the processes' own CPU and that of the ones
they waited for). The test suite loads a page about a hundred times a run on a CPU-bound 2-core
machine, so a CPU-s here is about half a second of CI; for a visitor it is the time a slow
laptop's browser is busy. The table says what the machine was doing (load average) at the start.

A profile on disk, its HTTP and V8 code caches kept from load to load (a returning visitor), cost
within a few per cent of this (lab and explain 10 % less, the lighter pages up to 15 % more;
2026-12-02): the browser tests keep a fresh context per test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnviz.app import nav  # noqa: E402
from scripts.loadtest import CHARTS_DRAWN_JS, IDLE_JS, MIN_CHARTS  # noqa: E402
from tests.browser import FULL, SharedBrowser, streamlit_server  # noqa: E402
from tests.cputime import tree_cpu  # noqa: E402

TIMEOUT_MS = 240_000


def browser_cpu() -> float:
    kinds = tree_cpu()
    return kinds["chromium"] + kinds["other"]  # the browser and its Playwright driver


def load(page: object, url: str, path: str) -> float:
    """Open URL/PATH and wait until it is idle with its charts drawn; the wall seconds."""
    t0 = time.monotonic()
    page.goto(f"{url}/{path}", timeout=TIMEOUT_MS)  # type: ignore[attr-defined]
    page.wait_for_function(IDLE_JS, timeout=TIMEOUT_MS)  # type: ignore[attr-defined]
    page.wait_for_function(CHARTS_DRAWN_JS, arg=MIN_CHARTS.get(path, 0), timeout=TIMEOUT_MS)  # type: ignore[attr-defined]
    return time.monotonic() - t0


def measure(pool: SharedBrowser, url: str, path: str) -> tuple[float, float]:
    """(CPU-s of the browser, wall s) for one first visit to PATH."""
    browser = pool.get()
    before = browser_cpu()
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
    try:
        wall = load(context.new_page(), url, path)
    finally:
        context.close()
    time.sleep(0.3)  # the closed page's processes end and are counted
    return browser_cpu() - before, wall


def main() -> int:
    os.environ.setdefault("ATTNVIZ_CHROMIUM", FULL)  # what a person's browser does, not the tests' shell
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", nargs="*", default=["", *(p.name for p in nav.PAGES)], help="URL paths ('' = explorer)")
    ap.add_argument("--loads", type=int, default=3, help="first visits to each page")
    args = ap.parse_args()
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    results: dict[str, list[tuple[float, float]]] = {}
    with streamlit_server(args=["--server.fileWatcherType=none"]) as (url, _proc):
        pool = SharedBrowser()
        try:
            for path in args.pages:  # warm: the server's model, its pages' first runs
                measure(pool, url, path)
            for path in args.pages:
                results[path] = [measure(pool, url, path) for _ in range(args.loads)]
        finally:
            pool.close()
    print("| page | browser CPU-s a first visit: median (each) | wall s to drawn: median |")
    print("|---|---|---|")
    for path, runs in results.items():
        cpu = f"{statistics.median(c for c, _ in runs):.2f} ({' '.join(f'{c:.1f}' for c, _ in runs)})"
        print(f"| /{path} | {cpu} | {statistics.median(w for _, w in runs):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
