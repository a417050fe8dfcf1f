"""The app in a real browser: cold start, a 512-token analysis, and the server's memory (issue 5).

    .venv/bin/python bench/bench_browser.py                        # prints the table
    .venv/bin/python bench/bench_browser.py --out run.md           # and writes it (with the command)
    .venv/bin/python bench/bench_browser.py --server-env ATTNVIZ_CACHE_MB=128 \\
        --server-arg=--server.fileWatcherType=none --out run.md --append   # another setting, appended
    .venv/bin/python bench/bench_browser.py --tokens 32 --repeats 1       # a quick smoke run

bench/results_browser.md holds recorded runs under a summary written by hand: --append to it.

Debian's chromium driven by Playwright against `streamlit run app.py` on a free loopback port
(tests/browser.py starts both). Figures only, no assertions; the budgets are printed beside them.

- Cold start: from launching `streamlit run app.py` to the first chart drawn in the browser
  (budget < 20 s). The page is opened as soon as /_stcore/health answers, as a person would
  open the printed URL. Also recorded: when the page frame first shows something, when a
  progress indicator (spinner or skeleton) first shows and what it says, and when every
  explorer chart shown is drawn.
- 512 tokens: a text the embedded model tokenises to exactly 512 tokens (specials included, no
  truncation) is typed into the sentence box; the clock runs from pressing Ctrl+Enter until every
  explorer chart shown is redrawn with the new data (budget < 10 s): the heatmap and the grid
  (since issue 24.1 the head and graph views wait, uncomputed, in a closed expander). Every repeat uses a
  different 512-token text, so each one runs the model (the result cache cannot answer it);
  the median is reported. A tab crash is recorded.
- Memory: resident set size of the server process and its children, sampled every 0.2 s from
  health to the end. After the 512-token runs the same session visits the lab, explain and
  caveats pages for that text; "peak" is the largest sample of the whole run, "steady" the
  median over the last seconds with every page done (budget: peak <= 1.0 GB = 1000 MB).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from tests.browser import FULL, browser, streamlit_server  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from breakdown import RECORDS_JS, breakdown, probes_js, rows  # noqa: E402

BUDGET_COLD_S = 5.0  # issue 24 (issue 5 had 20 s)
BUDGET_512_S = 1.0  # issue 24 (issue 5 had 10 s)
BUDGET_PEAK_MB = 1000.0
SEPARATOR = " · "  # app_pages.common.TOKEN_SEPARATOR
VIEWS = ("view_heatmap", "view_grid")  # every chart the explorer shows (head and graph views: closed expander)
PASSAGE = (
    "The animal didn't cross the street because it was tired. The animal didn't cross the street "
    "because it was wide. I deposited money in the bank, then sat by the river bank and watched the "
    "water. The dog bites the man and the man bites the dog, which is news. Students type a sentence, "
    "look at every layer and head, and ask how far attention can be trusted as an explanation. "
    "Long inputs are the most common complaint about attention viewers, so the cost of every view "
    "has to stay small even when the text fills the whole context of the model. "
)

# First appearance (Date.now(), ms) of what the page shows while it loads; kept in window.__seen.
OBSERVER_JS = """
(() => {
  const seen = {}; window.__seen = seen;
  const probes = {
    frame: () => document.querySelector('[data-testid="stAppSkeleton"], [data-testid="stSkeleton"],'
      + ' [data-testid="stSidebarNav"], [data-testid="stMain"] h1'),
    skeleton: () => document.querySelector('[data-testid="stAppSkeleton"], [data-testid="stSkeleton"]'),
    spinner: () => document.querySelector('[data-testid="stSpinner"]'),
    title: () => document.querySelector('[data-testid="stMain"] h1'),
    box: () => document.querySelector('.st-key-sentence_input textarea'),
    chart: () => document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot .main-svg,'
      + ' [data-attnviz-map][data-drawn]'),
  };
  const check = () => {
    for (const [name, probe] of Object.entries(probes)) {
      if (seen[name] === undefined) {
        const el = probe();
        if (el) { seen[name] = Date.now(); if (name === 'spinner') seen.spinner_text = el.innerText.trim(); }
      }
    }
  };
  new MutationObserver(check).observe(document, {childList: true, subtree: true});
  check();
})();
"""

# When the browser asked for Streamlit's Plotly chart code (Date.now() ms; app/coldstart/warmup.py preloads it).
CHART_CODE_JS = """() => { const e = performance.getEntriesByType('resource')
  .find(e => /\\/static\\/js\\/PlotlyChart\\.[^/]*\\.js$/.test(e.name));
  return e ? performance.timeOrigin + e.startTime : null; }"""

# A view's chart, Plotly's or the canvas map's (app/canvas/token_canvas.py): what it draws and whether it has.
CHART_OF = """const chartOf = (k) => {
    const m = document.querySelector('.st-key-' + k + ' [data-attnviz-map][data-drawn]');
    if (m) return {data: m.__attnvizMap, ready: true, el: m};
    const gd = document.querySelector('.st-key-' + k + ' .js-plotly-plot');
    return gd ? {data: gd.data, ready: !!gd.querySelector('.main-svg') && !!gd._fullLayout, el: gd} : null;
  };"""

VIEWS_DRAWN_JS = """(keys) => { CHART_OF
  return keys.every(k => { const c = chartOf(k); return !!c && c.ready; }); }""".replace("CHART_OF", CHART_OF)

IDLE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.dataset.testScriptState === 'notRunning'
    && !document.querySelector('[data-stale="true"]') && !document.querySelector('[data-testid="stSpinner"]');
}"""

# Remember the data each view draws now, so that "redrawn" means new data, not the old chart; and
# watch the run from here (every animation frame): when the script starts and stops running on
# the server, when each view is redrawn, and the browser's long tasks (main thread busy > 50 ms:
# parsing the messages, Plotly drawing) for the breakdown.
MARK_JS = """([keys, n]) => { CHART_OF
  window.__old = new Map(keys.map(k => { const c = chartOf(k); return [k, c ? c.data : null]; }));
  if (!window.__long) {
    window.__long = [];
    new PerformanceObserver(list => { for (const e of list.getEntries()) window.__long.push([e.startTime, e.duration]); })
      .observe({type: 'longtask'});
  }
  const oldCode = document.querySelector('.st-key-tokens code');
  const oldTokens = oldCode ? oldCode.innerText : null;
  const t0 = performance.now();
  const w = window.__watch = {t0, running: null, done: null, tokens: null, views: {}};
  const tick = () => {
    const now = performance.now() - t0;
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app ? app.dataset.testScriptState : null;
    if (state === 'running' && w.running === null) w.running = now;
    if (w.running !== null && state === 'notRunning' && w.done === null) w.done = now;
    const code = document.querySelector('.st-key-tokens code');
    if (w.tokens === null && code && code.innerText !== oldTokens && code.innerText.trim().split(' · ').length === n)
      w.tokens = now;
    for (const k of keys) {
      const c = chartOf(k);
      if (w.views[k] === undefined && c && c.ready && c.data !== window.__old.get(k)
          && !c.el.closest('[data-stale="true"]')) w.views[k] = now;
    }
    if (w.done === null || Object.keys(w.views).length < keys.length) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}""".replace("CHART_OF", CHART_OF)

WATCH_JS = """() => { const w = window.__watch;
  const busy = window.__long.filter(([s, d]) => s + d >= w.t0).reduce((a, [s, d]) => a + d, 0);
  return {running: w.running, done: w.done, tokens: w.tokens, views: w.views, busy, ...(RECORDS)(w)}; }""".replace(
    "RECORDS", RECORDS_JS
)

REDRAWN_JS = """([keys, n]) => { CHART_OF
  const code = document.querySelector('.st-key-tokens code');
  if (!code || code.innerText.trim().split(' · ').length !== n) return false;
  return keys.every(k => {
    const c = chartOf(k);
    return !!c && c.ready && c.data !== window.__old.get(k) && !c.el.closest('[data-stale="true"]');
  });
}""".replace("CHART_OF", CHART_OF)

TOKENS_JS = """(n) => { const c = document.querySelector('.st-key-tokens code');
  return !!c && c.innerText.trim().split(' · ').length === n; }"""


# --- texts ------------------------------------------------------------------------------------


def texts_of_exactly(n: int, count: int) -> list[str]:
    """`count` different texts that the embedded model reads as exactly n tokens, untruncated."""
    import attnviz

    model = attnviz.load_model("minilm", device="cpu")
    words = (PASSAGE * (n // 40 + 4)).split()
    out = []
    for start in range(count):
        chosen = words[start * 7 :]  # a different opening each time: a different text, the same length
        lo, hi = 1, len(chosen)
        while lo < hi:  # the most words that still fit in n tokens
            mid = (lo + hi + 1) // 2
            if model.encode(" ".join(chosen[:mid]), max_tokens=10**6).n_input_tokens <= n:
                lo = mid
            else:
                hi = mid - 1
        text = " ".join(chosen[:lo])
        while model.encode(text, max_tokens=10**6).n_input_tokens < n:
            text += " the"  # one token at a time up to n
        enc = model.encode(text, max_tokens=n)
        if len(enc.tokens) != n or enc.truncated:
            raise SystemExit(f"could not build a {n}-token text ({len(enc.tokens)} tokens, truncated={enc.truncated})")
        out.append(text)
    return out


# --- memory -----------------------------------------------------------------------------------


@dataclass
class RSSSampler:
    """RSS of a process and its children, every `interval` seconds, in a thread."""

    pid: int
    interval: float = 0.2
    samples: list[tuple[float, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _rss(self) -> int:
        try:
            proc = psutil.Process(self.pid)
            procs = [proc, *proc.children(recursive=True)]
        except psutil.Error:
            return 0
        total = 0
        for p in procs:
            with contextlib.suppress(psutil.Error):
                total += p.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.time(), self._rss()))
            self._stop.wait(self.interval)

    def start(self) -> RSSSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def peak_mb(self, since: float = 0.0) -> float:
        return max((r for t, r in self.samples if t >= since), default=0) / 1e6

    def median_mb(self, since: float) -> float:
        values = [r for t, r in self.samples if t >= since]
        return statistics.median(values) / 1e6 if values else 0.0

    def now_mb(self) -> float:
        return self._rss() / 1e6


# --- the run ----------------------------------------------------------------------------------


@dataclass
class Result:
    health_s: float = 0.0
    frame_s: float | None = None
    skeleton_s: float | None = None
    spinner_s: float | None = None
    spinner_text: str = ""
    title_s: float | None = None
    box_s: float | None = None
    chart_code_s: float | None = None
    first_chart_s: float | None = None
    views_s: float | None = None
    runs_512: list[float] = field(default_factory=list)
    watched: list[dict[str, Any]] = field(default_factory=list)
    ws_mb_512: list[float] = field(default_factory=list)
    pages_s: dict[str, float] = field(default_factory=dict)
    pages_mb: dict[str, float] = field(default_factory=dict)
    pages_peak_mb: dict[str, float] = field(default_factory=dict)
    rss_after_cold_mb: float = 0.0
    rss_after_512_mb: float = 0.0
    peak_mb: float = 0.0
    steady_mb: float = 0.0
    js_heap_mb: float | None = None
    crashed: bool = False
    notes: list[str] = field(default_factory=list)


def _since(seen: dict[str, Any], name: str, t0: float) -> float | None:
    value = seen.get(name)
    return None if value is None else value / 1000.0 - t0


def run(
    server_args: list[str],
    server_env: dict[str, str],
    repeats: int,
    n_tokens: int,
    timeout_s: float,
    pages: tuple[str, ...] = ("lab", "explain", "caveats"),
) -> Result:
    res = Result()
    print(f"building {repeats} texts of exactly {n_tokens} tokens ...", flush=True)
    texts = texts_of_exactly(n_tokens, repeats)
    timeout_ms = int(timeout_s * 1000)
    with browser() as b:
        ctx = b.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
        ctx.add_init_script(OBSERVER_JS)
        ctx.add_init_script(probes_js())
        page = ctx.new_page()
        page.set_default_timeout(timeout_ms)
        page.on("crash", lambda _p: setattr(res, "crashed", True))
        frames: list[int] = []
        page.on("websocket", lambda ws: ws.on("framereceived", lambda p: frames.append(len(p or b""))))

        print("cold start ...", flush=True)
        t0 = time.time()
        with streamlit_server(env=server_env, args=server_args) as (url, proc):
            res.health_s = time.time() - t0
            sampler = RSSSampler(proc.pid).start()
            try:
                page.goto(url, wait_until="commit")
                page.wait_for_function("() => window.__seen && window.__seen.chart", timeout=timeout_ms, polling=50)
                page.wait_for_function(VIEWS_DRAWN_JS, arg=list(VIEWS), timeout=timeout_ms, polling=50)
                seen = page.evaluate("() => window.__seen")
                res.frame_s = _since(seen, "frame", t0)
                res.skeleton_s = _since(seen, "skeleton", t0)
                res.spinner_s = _since(seen, "spinner", t0)
                res.spinner_text = str(seen.get("spinner_text", ""))
                res.title_s = _since(seen, "title", t0)
                res.box_s = _since(seen, "box", t0)
                res.first_chart_s = _since(seen, "chart", t0)
                res.views_s = time.time() - t0
                res.chart_code_s = _since({"code": page.evaluate(CHART_CODE_JS)}, "code", t0)
                page.wait_for_function(IDLE_JS, timeout=timeout_ms)
                res.rss_after_cold_mb = sampler.now_mb()
                print(f"  first chart {res.first_chart_s:.1f} s, all views {res.views_s:.1f} s", flush=True)

                box = page.locator(".st-key-sentence_input textarea")
                for i, text in enumerate(texts):
                    box.fill(text)
                    page.evaluate(MARK_JS, [list(VIEWS), n_tokens])
                    frames.clear()
                    start = time.time()
                    box.press("Control+Enter")
                    page.wait_for_function(REDRAWN_JS, arg=[list(VIEWS), n_tokens], timeout=timeout_ms, polling=50)
                    res.runs_512.append(time.time() - start)
                    res.ws_mb_512.append(sum(frames) / 1e6)
                    page.wait_for_function(IDLE_JS, timeout=timeout_ms)
                    res.watched.append(page.evaluate(WATCH_JS))
                    parts = breakdown(res.watched[-1], VIEWS)["views"]
                    print("    " + ", ".join(f"{k[5:]} msg {v['msg'] or 0:.2f} plot {v['plot_start'] or 0:.2f}-"
                                             f"{v['plot_done'] or 0:.2f} ({v['plot_sync']:.2f} s, {v['calls']} calls, {v['draws']} drawn)"
                                             for k, v in parts.items()), flush=True)  # fmt: skip
                    print(f"  {n_tokens} tokens, run {i + 1}: {res.runs_512[-1]:.2f} s", flush=True)
                res.rss_after_512_mb = sampler.now_mb()
                page.screenshot(path=str(ROOT / "test-artifacts" / "bench-512-explorer.png"))

                for url_path in pages:
                    start = time.time()
                    page.locator(f'[data-testid="stSidebarNav"] a[href="{url}/{url_path}"]').click()
                    page.wait_for_function("(p) => location.pathname === p", arg=f"/{url_path}", timeout=timeout_ms)
                    page.wait_for_function(TOKENS_JS, arg=n_tokens, timeout=timeout_ms)
                    page.wait_for_timeout(300)
                    page.wait_for_function(IDLE_JS, timeout=timeout_ms)
                    res.pages_s[url_path] = time.time() - start
                    res.pages_mb[url_path] = sampler.now_mb()
                    res.pages_peak_mb[url_path] = sampler.peak_mb(since=start)
                    print(f"  {url_path} page: {res.pages_s[url_path]:.1f} s", flush=True)
                    page.screenshot(path=str(ROOT / "test-artifacts" / f"bench-512-{url_path}.png"))
                settle = time.time()
                time.sleep(5.0)
                res.steady_mb = sampler.median_mb(since=settle)
                res.js_heap_mb = page.evaluate(
                    "() => performance.memory ? performance.memory.usedJSHeapSize / 1e6 : null"
                )
                if page.evaluate("() => 1 + 1") != 2:
                    res.crashed = True
            except Exception as exc:  # a figure, not a test: report what happened and keep the rest
                res.notes.append(f"stopped early: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
                print(res.notes[-1], flush=True)
            finally:
                sampler.stop()
                res.peak_mb = sampler.peak_mb()
        ctx.close()
    return res


# --- report -----------------------------------------------------------------------------------


def _fmt(value: float | None, unit: str = "s") -> str:
    return "—" if value is None else f"{value:.1f} {unit}"


def _verdict(value: float | None, budget: float, below: bool = True) -> str:
    if value is None:
        return "not measured"
    ok = value < budget if below else value <= budget
    return "ok" if ok else "**missed**"


def table(res: Result, repeats: int, n: int) -> str:
    median = statistics.median(res.runs_512) if res.runs_512 else None
    runs = ", ".join(f"{r:.2f}" for r in res.runs_512)
    ws = statistics.median(res.ws_mb_512) if res.ws_mb_512 else None
    pages = ", ".join(f"{k} {v:.1f} s" for k, v in res.pages_s.items())
    pages_mb = ", ".join(f"{k} {v:.0f} MB (peak {res.pages_peak_mb[k]:.0f})" for k, v in res.pages_mb.items())
    spinner = _fmt(res.spinner_s) + (f": “{res.spinner_text}”" if res.spinner_text else "")
    rows = [
        ("cold start: server healthy", _fmt(res.health_s), "", ""),
        ("cold start: page frame shows something", _fmt(res.frame_s), "at once", ""),
        ("cold start: loading skeleton first shown", _fmt(res.skeleton_s), "", ""),
        ("cold start: first spinner shown", spinner, "before the first chart", _progress_ok(res)),
        ("cold start: page title drawn", _fmt(res.title_s), "", ""),
        ("cold start: sentence box drawn", _fmt(res.box_s), "at once", ""),
        ("cold start: Streamlit's chart code requested", _fmt(res.chart_code_s), "before the first chart", ""),
        ("**cold start: first chart drawn**", _fmt(res.first_chart_s), f"<= {BUDGET_COLD_S:.0f} s",
         _verdict(res.first_chart_s, BUDGET_COLD_S, below=False)),
        ("cold start: every explorer chart shown drawn", _fmt(res.views_s), "", ""),
        (f"**{n} tokens: Ctrl+Enter to every explorer chart shown redrawn** (median of {len(res.runs_512)})", _fmt(median),
         f"<= {BUDGET_512_S:.1f} s", _verdict(median, BUDGET_512_S, below=False)),
        (f"{n} tokens: each run", f"{runs} s" if runs else "—", "", ""),
        (f"{n} tokens: websocket data per run (median)", _fmt(ws, "MB"), "", ""),
        *_breakdown(res, n),
        ("tab crashed", "yes" if res.crashed else "no", "no", "**missed**" if res.crashed else "ok"),
        (f"other pages with the {n}-token text", pages or "—", "", ""),
        ("server RSS after the cold start", _fmt(res.rss_after_cold_mb, "MB"), "", ""),
        (f"server RSS after the {n}-token runs", _fmt(res.rss_after_512_mb, "MB"), "", ""),
        ("server RSS after each of those pages (peak while it ran)", pages_mb or "—", "", ""),
        ("**server RSS peak** (process + children, 0.2 s samples)", _fmt(res.peak_mb, "MB"),
         f"<= {BUDGET_PEAK_MB:.0f} MB", _verdict(res.peak_mb, BUDGET_PEAK_MB, below=False)),
        ("server RSS steady (median of 5 s, every page done)", _fmt(res.steady_mb, "MB"), "", ""),
        ("browser JS heap at the end", _fmt(res.js_heap_mb, "MB"), "", ""),
    ]  # fmt: skip
    lines = ["| measure | value | budget | verdict |", "|---|---:|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    lines += [f"\n{note}" for note in res.notes]
    return "\n".join(lines)


def _breakdown(res: Result, n: int) -> list[tuple[str, str, str, str]]:
    """Where each run's time went, seen from the browser (medians over the runs, seconds from
    Ctrl+Enter): the script starting and finishing on the server, each view redrawn, and the
    browser's main thread busy in long tasks (> 50 ms: message parsing, Plotly drawing)."""
    if not res.watched:
        return []

    def med(values: list[Any]) -> str:
        got = [v / 1000 for v in values if v is not None]
        return f"{statistics.median(got):.2f} s" if got else "—"

    views = ", ".join(f"{k.removeprefix('view_')} {med([w['views'].get(k) for w in res.watched])}" for k in VIEWS)
    return [
        (f"{n} tokens: script running on the server from / until (median)",
         f"{med([w['running'] for w in res.watched])} / {med([w['done'] for w in res.watched])}", "", ""),
        (f"{n} tokens: new tokens shown (the forward pass done, median)", med([w["tokens"] for w in res.watched]),
         "", ""),
        (f"{n} tokens: each view redrawn at (median)", views, "", ""),
        (f"{n} tokens: browser main thread busy in long tasks (median)",
         med([w["busy"] for w in res.watched]), "", ""),
        *rows([breakdown(w, VIEWS) for w in res.watched], VIEWS, n),
    ]  # fmt: skip


def _progress_ok(res: Result) -> str:
    if res.spinner_s is None:
        return "**missed** (none seen)"
    if res.first_chart_s is not None and res.spinner_s >= res.first_chart_s:
        return "**missed** (after the chart)"
    return "ok"


def machine() -> str:
    import streamlit
    import torch

    try:
        chromium = subprocess.run(["chromium", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        chromium = "chromium ?"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} CPUs ({platform.machine()}), {psutil.virtual_memory().total / 2**30:.0f} GiB RAM, "
        f"load average {load}; Python {platform.python_version()}, streamlit {streamlit.__version__}, "
        f"torch {torch.__version__}, {chromium}"
    )


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("ATTNVIZ_CHROMIUM", FULL)  # what a person's browser does, not the tests' shell
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="512-token runs (median reported)")
    ap.add_argument("--tokens", type=int, default=512, help="length of the long text in tokens")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for any one step")
    ap.add_argument("--server-arg", action="append", default=[], help="extra `streamlit run` argument (repeatable)")
    ap.add_argument(
        "--server-env", action="append", default=[], metavar="NAME=VALUE", help="server environment (repeatable)"
    )
    ap.add_argument(
        "--pages", default="lab,explain,caveats", help="pages visited after the runs, comma-separated ('' for none)"
    )
    ap.add_argument("--out", type=Path, help="write the markdown table (with the command) here")
    ap.add_argument("--append", action="store_true", help="append to --out instead of replacing it")
    ap.add_argument("--json", type=Path, help="write each run's raw browser records (messages, Plotly calls) here")
    args = ap.parse_args(argv)

    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    before = machine()
    env = dict(item.split("=", 1) for item in args.server_env)
    pages = tuple(p for p in args.pages.split(",") if p)
    res = run(args.server_arg, env, args.repeats, args.tokens, args.timeout, pages)
    after = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    if args.json:
        args.json.write_text(json.dumps(res.watched, indent=1))
    command = shlex.join([".venv/bin/python", "bench/bench_browser.py", *(argv if argv is not None else sys.argv[1:])])
    settings = " ".join([*args.server_env, *args.server_arg]) or "the app's own .streamlit/config.toml and defaults"
    report = (
        f"### `{command}`\n\n"
        f"Recorded {time.strftime('%Y-%m-%d %H:%M')}; server settings: {settings}.\n"
        f"Machine at the start: {before}; load average at the end: {after}.\n\n"
        f"{table(res, args.repeats, args.tokens)}\n"
    )
    print()
    print(report)
    if args.out:
        if args.append and args.out.exists():
            args.out.write_text(args.out.read_text() + "\n" + report)
        else:
            args.out.write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
