"""What one page load costs the browser, page by page (issue 24.5): Chromium's CPU-s for a load
until the page is idle with its charts drawn, a first visit (a new browser context: nothing
cached) beside a returning one (a profile on disk: the HTTP and V8 code caches kept, as the
browser tests' pages have them, tests/browser.py: Profile), alternating in one process against
one warm server.

    .venv/bin/python bench/bench_pageload.py                 # every page, 3 loads each way
    .venv/bin/python bench/bench_pageload.py --pages '' lab --loads 5

The CPU is exact, not sampled (tests/cputime.py: the processes' own CPU and that of the ones
they waited for). The test suite loads a page about a hundred times a run on a CPU-bound 2-core
machine, so a CPU-s here is about half a second of CI; for a visitor it is the time a slow
laptop's browser is busy. The table says what the machine was doing (load average) at the start.
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
from tests.browser import SharedBrowser, fresh_page, streamlit_server  # noqa: E402
from tests.cputime import tree_cpu  # noqa: E402

WAYS = ("first visit", "returning")
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


def measure(pool: SharedBrowser, url: str, path: str, way: str) -> tuple[float, float]:
    """(CPU-s of the browser, wall s) for one load of PATH, WAY."""
    browser = pool.get()
    before = browser_cpu()
    if way == "returning":
        with fresh_page(browser, url, viewport={"width": 1400, "height": 1000}) as page:
            wall = load(page, url, path)
    else:
        context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
        try:
            wall = load(context.new_page(), url, path)
        finally:
            context.close()
    time.sleep(0.3)  # the closed page's processes end and are counted
    return browser_cpu() - before, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", nargs="*", default=["", *(p.name for p in nav.PAGES)], help="URL paths ('' = explorer)")
    ap.add_argument("--loads", type=int, default=3, help="loads of each page each way (alternating)")
    args = ap.parse_args()
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with streamlit_server(args=["--server.fileWatcherType=none"]) as (url, _proc):
        pool = SharedBrowser()
        try:
            for path in args.pages:  # warm: the server's model and pages, the profile's caches
                measure(pool, url, path, "returning")
                measure(pool, url, path, "returning")
            for path in args.pages:
                for _ in range(args.loads):
                    for way in WAYS:
                        results.setdefault((path, way), []).append(measure(pool, url, path, way))
        finally:
            pool.close()
    print(
        "| page | first visit: browser CPU-s (each) | returning: browser CPU-s (each) | wall s, first / returning (medians) |"
    )
    print("|---|---|---|---|")
    for path in args.pages:
        first, back = results[(path, WAYS[0])], results[(path, WAYS[1])]
        cells = [
            f"{statistics.median(c for c, _ in r):.2f} ({' '.join(f'{c:.1f}' for c, _ in r)})" for r in (first, back)
        ]
        walls = f"{statistics.median(w for _, w in first):.1f} / {statistics.median(w for _, w in back):.1f}"
        print(f"| /{path} | {cells[0]} | {cells[1]} | {walls} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
