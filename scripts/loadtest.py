"""Many users at once: N real browser sessions (Debian's chromium, Playwright) against one
`streamlit run app.py` on loopback, each analysing its own sentences again and again.

Checks that every session always sees its own tokens (no cross-talk through caches), that no
analysis fails, and that the server's memory levels off; prints latency percentiles and memory.
Bounded in count and time, loopback only.

    .venv/bin/python scripts/loadtest.py --sessions 8 --analyses 200 --out docs/loadtest.md
    .venv/bin/python scripts/loadtest.py --scenario stall   # 2 heavy explanations + a new sentence
    .venv/bin/python scripts/loadtest.py --scenario cold    # 8 first visits to a cold server at once
    .venv/bin/python scripts/loadtest.py --scenario flood --attackers 10 --rounds 3 --victims 2
    .venv/bin/python scripts/loadtest.py --scenario flood --raw ...  # attackers that never draw
        # issue 26's recipes (scripts/attacks.py): flood, lab, flow, training, closed, bomb
    .venv/bin/python scripts/loadtest.py --scenario heavy --attackers 10 --rounds 2 --victims 2 --demo
        # ten visitors each running the heaviest thing the demo allows
    .venv/bin/python scripts/loadtest.py --scenario class --students 30 60 120 --demo
        # a lecture hall (scripts/hall.py): N simple clients, a short sentence every 20-40 s each
    .venv/bin/python scripts/loadtest.py --scenario switching --attackers 4 --rounds 8 --demo --memory-limit 1500
        # a recipe with the server in a 1,500 MB memory cgroup, as a container's limit (scripts/cgroup.py)
    .venv/bin/python scripts/loadtest.py --scenario paste --rounds 10
        # four visitors at once paste a different ~7,000-word text on /?model=smollm2, ten times
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnviz.app import nav  # noqa: E402
from scripts import attacks, cgroup, hall  # noqa: E402
from tests.browser import CHROMIUM_ARGS, FULL, chromium_path, streamlit_server  # noqa: E402

WORDS = ["river", "bank", "money", "animal", "street", "tired", "wide", "dog", "man", "bites", "cat", "tree"]


@dataclass
class Report:
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    crosstalk: list[str] = field(default_factory=list)
    rss_mb: list[tuple[int, float]] = field(default_factory=list)  # (analyses done, server MB)
    analyses: int = 0
    seconds: float = 0.0

    def percentile(self, p: float) -> float:
        xs = sorted(self.latencies)
        return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))] if xs else float("nan")


def sentence(session: int, round_: int) -> tuple[str, str]:
    """A sentence only this session sends in this round, and the token text that proves it."""
    w1, w2 = WORDS[session % len(WORDS)], WORDS[(round_ + session) % len(WORDS)]
    text = f"session {session} round {round_} the {w1} saw the {w2}"
    return text, f" session {session} round {round_} "


def normalise(shown: str) -> str:
    """Token display -> ' tok tok tok ' whatever separators and brackets the page uses."""
    return " " + re.sub(r"[\s·\[\]]+", " ", shown).strip() + " "


def server_rss_mb(pid: int) -> float:
    proc = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20


async def user(
    browser: object, url: str, session: int, rounds: int, deadline: float, report: Report, done: list[int], pid: int
) -> None:
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    page = await context.new_page()
    page.on("dialog", lambda d: report.failures.append(f"session {session}: dialog {d.message!r}"))
    await page.goto(url, wait_until="domcontentloaded")
    box = page.locator(".st-key-sentence_input textarea")
    await box.wait_for(timeout=90_000)
    await page.locator(".st-key-tokens").wait_for(timeout=90_000)
    for r in range(rounds):
        if time.monotonic() > deadline:
            break
        text, proof = sentence(session, r)
        t0 = time.monotonic()
        await box.fill(text)
        await box.press("Control+Enter")
        tokens = page.locator(".st-key-tokens code")
        try:
            await page.wait_for_function(
                "([sel, proof]) => { const e = document.querySelector(sel);"
                " return e && (' ' + e.innerText.replace(/[\\s·\\[\\]]+/g, ' ').trim() + ' ').includes(proof); }",
                arg=[".st-key-tokens code", proof],
                timeout=60_000,
            )
        except Exception as exc:  # a timeout here is a failed analysis
            report.failures.append(f"session {session} round {r}: {type(exc).__name__}")
            continue
        report.latencies.append(time.monotonic() - t0)
        shown = normalise(await tokens.inner_text())
        for other in range(64):
            if other != session and f" session {other} round " in shown:
                report.crosstalk.append(f"session {session} saw session {other}'s tokens")
        if await page.locator('[data-testid="stException"]').count():
            report.failures.append(f"session {session} round {r}: exception shown")
        done[0] += 1
        report.analyses = done[0]
        if done[0] in (20, 50, 100, 150, 200, 300, 400) or done[0] % 50 == 0:
            report.rss_mb.append((done[0], server_rss_mb(pid)))
    await context.close()


async def drive(url: str, pid: int, sessions: int, analyses: int, max_seconds: float) -> Report:
    from playwright.async_api import async_playwright

    report = Report()
    rounds = -(-analyses // sessions)
    deadline = time.monotonic() + max_seconds
    done = [0]
    t0 = time.monotonic()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            await asyncio.gather(*(user(browser, url, s, rounds, deadline, report, done, pid) for s in range(sessions)))
        finally:
            await browser.close()
    report.seconds = time.monotonic() - t0
    return report


def run(sessions: int = 8, analyses: int = 200, max_seconds: float = 600, env: dict[str, str] | None = None) -> Report:
    with streamlit_server(env=env) as (url, proc):
        return asyncio.run(drive(url, proc.pid, sessions, analyses, max_seconds))


def table(report: Report, sessions: int) -> str:
    lines = [
        f"{sessions} concurrent browser sessions, {report.analyses} analyses in {report.seconds:.0f} s, "
        f"{len(report.failures)} failures, {len(report.crosstalk)} cross-talk events",
        "",
        "| latency p50 (s) | p90 (s) | p99 (s) | max (s) |",
        "|---:|---:|---:|---:|",
        f"| {report.percentile(50):.2f} | {report.percentile(90):.2f} | {report.percentile(99):.2f} | "
        f"{max(report.latencies, default=float('nan')):.2f} |",
        "",
        "| analyses done | server RSS (MB) |",
        "|---:|---:|",
        *(f"| {n} | {mb:.0f} |" for n, mb in report.rss_mb),
    ]
    return "\n".join(lines)


HEAVY_WORDS = (WORDS * 60)[:600]  # 600 words: cut to the 512-token limit
PAGES = ("", *(p.name for p in nav.PAGES), "")  # a first visit to every page (attnviz/app/nav.py) and two to "/"
IDLE_JS = """() => { const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.dataset.testScriptState === 'notRunning' && !!document.querySelector('h1')
    && !document.querySelector('[data-testid="stSpinner"]'); }"""
DRAWN_JS = """(proof) => { const e = document.querySelector('.st-key-tokens code');
  const t = e && (' ' + e.innerText.replace(/[\\s·\\[\\]]+/g, ' ').trim() + ' ');
  return !!t && t.includes(proof) && ['view_heatmap', 'view_grid'].every(k => {
    if (document.querySelector('.st-key-' + k + ' [data-attnviz-map][data-drawn]')) return true;  // the canvas map
    const g = document.querySelector('.st-key-' + k + ' .js-plotly-plot'); return !!g && !!g._fullLayout; }); }"""
# (the explorer's charts: the head and graph views wait, not computed, in a closed expander)


@dataclass
class StallReport:
    latencies: list[float] = field(default_factory=list)  # the third session's new sentences, drawn
    heavy_running: list[bool] = field(default_factory=list)  # both explanations still going when drawn
    failures: list[str] = field(default_factory=list)


async def _heavy(browser: object, url: str, index: int, report: StallReport) -> object:
    """A session that asks for occlusion and input x gradient of a 512-token text (minutes of CPU);
    each session its own text (identical requests would be computed once, for both)."""
    import urllib.parse

    context = await browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    page = await context.new_page()
    words = HEAVY_WORDS[index:] + HEAVY_WORDS[:index]
    await page.goto(f"{url}/explain?" + urllib.parse.urlencode({"text": " ".join(words)}))
    button = page.locator(".st-key-x_compute button")
    await button.wait_for(timeout=240_000)
    await button.click()
    await page.locator('[data-testid="stProgress"]').wait_for(timeout=180_000)
    return page


async def _stall(url: str, rounds: int) -> StallReport:
    from playwright.async_api import async_playwright

    report = StallReport()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            third = await (await browser.new_context(viewport={"width": 1400, "height": 1000})).new_page()
            await third.goto(url)
            await third.wait_for_function(DRAWN_JS, arg=" the ", timeout=240_000)  # first visit, not measured
            heavy = await asyncio.gather(*(_heavy(browser, url, i, report) for i in (1, 2)))
            box = third.locator(".st-key-sentence_input textarea")
            for r in range(rounds):
                text, proof = sentence(99, r)
                t0 = time.monotonic()
                await box.fill(text)
                await box.press("Control+Enter")
                try:
                    await third.wait_for_function(DRAWN_JS, arg=proof, timeout=120_000)
                except Exception as exc:
                    report.failures.append(f"round {r}: {type(exc).__name__}")
                    continue
                report.latencies.append(time.monotonic() - t0)
                running = [await p.locator('[data-testid="stProgress"]').count() > 0 for p in heavy]  # type: ignore[attr-defined]
                report.heavy_running.append(all(running))
        finally:
            await browser.close()
    return report


def stall(rounds: int = 3, env: dict[str, str] | None = None) -> StallReport:
    """Two sessions run the heaviest explanation at 512 tokens; a third types new sentences."""
    with streamlit_server(env=env) as (url, _proc):
        return asyncio.run(_stall(url, rounds))


LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
# The fonts the drawn page uses are loaded and two frames laid out since: what a page asks for
# after its first paint (the icon font, the favicon) has been asked for.
FONTS_LOADED_JS = """async () => {
  const frame = () => new Promise(r => requestAnimationFrame(() => r()));
  await document.fonts.ready; await frame(); await frame(); await document.fonts.ready;
  return document.fonts.status;
}"""
SHARE_DRAWN_JS = """() => !!document.querySelector('.st-key-share_link code')?.textContent"""
FAVICON_JS = """() => [...document.querySelectorAll('link[rel~="icon"]')].map(l => l.href)"""
# Every Plotly chart on the page is drawn, and at least `min` charts are, Plotly's and the canvas
# charts' (the explorer's heatmap and grid: app/canvas/token_canvas.py, app/canvas/grid_canvas.py) (MIN_CHARTS).
CHARTS_DRAWN_JS = """(min) => {
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  const drawn = charts.filter(c => { const gd = c.querySelector('.js-plotly-plot');
    return gd && gd._fullLayout && gd.querySelector('.main-svg'); });
  const canvases = [...document.querySelectorAll('[data-attnviz-map][data-drawn]')]
    .filter(m => !m.closest('.st-key-first_map')).length;  // not the cold start's first look (app/coldstart/first_map.py)
  return drawn.length === charts.length && drawn.length + canvases >= min;
}"""
MIN_CHARTS = {"": 2, "explorer": 2, "lab": 1, "explain": 1}  # charts drawn by default


def outside(url: str) -> bool:
    """A request that would leave the machine (data:, blob: and about: URLs stay in the page)."""
    from urllib.parse import urlparse

    parsed = urlparse(url)
    return parsed.scheme not in ("data", "blob", "about") and parsed.hostname not in LOOPBACK


def heading(path: str) -> str:
    """The English title of the page at PATH ("" is the explorer)."""
    from attnviz import i18n

    spec = next((p for p in nav.PAGES if p.name == path), nav.PAGES[0])
    return i18n.t(spec.heading_key, "en")


async def _page_problem(page: Any, path: str) -> str:
    """What is wrong with a ready page at PATH ("" if nothing): an exception, "Page not found",
    another page's title, a Plotly chart not drawn, or its fonts not loaded (once every chart is
    drawn, so that what they ask for has been asked for)."""
    if await page.locator('[data-testid="stException"]').count():
        return "exception"
    if await page.get_by_text("Page not found").count():
        return "page not found"
    try:  # this page, not the main page it once fell back to
        await page.wait_for_function(
            "(want) => document.querySelector('h1')?.innerText === want", arg=heading(path), timeout=60_000
        )
        await page.wait_for_function(CHARTS_DRAWN_JS, arg=MIN_CHARTS.get(path, 0), timeout=240_000)
    except Exception:
        title = await page.evaluate("() => document.querySelector('h1')?.innerText ?? ''")
        return f"another page: {title!r}" if title != heading(path) else "charts not drawn"
    fonts = await page.evaluate(FONTS_LOADED_JS)
    return "" if fonts == "loaded" else f"fonts {fonts}"


async def _code_problem(page: Any, asked: list[str]) -> str:
    """Once the sidebar's copy box is drawn (its component chunk asked for: the watch sees lazy
    chunks), the page must not have asked for Streamlit's syntax highlighter (issue 24.1)."""
    await page.wait_for_function(SHARE_DRAWN_JS, timeout=60_000)
    names = [a.rsplit("/", 1)[-1] for a in asked]
    if not any(n.startswith("BidiComponent.") for n in names):
        return "no component chunk asked for"
    return "asked for the syntax highlighter" if any("SyntaxHighlighter" in n for n in names) else ""


async def _cold(url: str) -> list[tuple[str, float, str]]:
    """Each visit in a browser context of its own (nothing from another visit's cache), which
    writes down every request and websocket to a host other than the loopback: a classroom
    without internet must get the whole app, fonts, icons and favicon included, from the server
    (tests/test_offline.py). A visit's problem: an exception, "Page not found" or another
    page's title (the typed URL must be that page), a request to the outside, or not ready."""
    from playwright.async_api import async_playwright

    async def visit(browser: object, path: str) -> tuple[str, float, str]:
        context = await browser.new_context(locale="en-US")  # type: ignore[attr-defined]
        fetched: list[str] = []
        asked: list[str] = []  # what the page asked our server for
        context.on("request", lambda r: (fetched if outside(r.url) else asked).append(r.url))
        page = await context.new_page()
        page.on("websocket", lambda ws: fetched.append(ws.url) if outside(ws.url) else None)
        t0 = time.monotonic()
        await page.goto(f"{url}/{path}", timeout=240_000)  # on a busy machine the load event alone took > 30 s
        try:
            await page.wait_for_function(IDLE_JS, timeout=300_000)
        except Exception as exc:
            return path, time.monotonic() - t0, f"not ready: {type(exc).__name__}"
        seconds = time.monotonic() - t0
        problem = await _page_problem(page, path) or await _code_problem(page, asked)
        fetched += [href for href in await page.evaluate(FAVICON_JS) if outside(href)]
        if not problem and fetched:
            problem = f"fetched from outside: {sorted(set(fetched))}"
        await context.close()
        return path, seconds, problem

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            return list(await asyncio.gather(*(visit(browser, p) for p in PAGES)))
        finally:
            await browser.close()


def cold_start(env: dict[str, str] | None = None) -> list[tuple[str, float, str]]:
    """Eight first visits, every page among them, to a server that has served nobody yet:
    (path, seconds until the page was ready, problem or "")."""
    with streamlit_server(env=env, args=["--server.fileWatcherType=none"]) as (url, _proc):
        return asyncio.run(_cold(url))


def main_stall(rounds: int) -> int:
    report = stall(rounds)
    lat = report.latencies
    print("two sessions computing occlusion + input x gradient at 512 tokens; a third types new sentences")
    print("| round | new sentence drawn in (s) | both explanations still running |")
    print("|---:|---:|---|")
    for i, (s_, running) in enumerate(zip(lat, report.heavy_running, strict=True)):
        print(f"| {i + 1} | {s_:.1f} | {'yes' if running else 'no'} |")
    print(f"max {max(lat, default=float('nan')):.1f} s (goal: under 10 s); failures: {report.failures}")
    return 0 if lat and not report.failures and max(lat) < 10 else 1


def main_cold() -> int:
    visits = cold_start()
    print("| page | ready after (s) | problem |")
    print("|---|---:|---|")
    for path, seconds, problem in visits:
        print(f"| /{path} | {seconds:.1f} | {problem or 'none'} |")
    return 0 if not any(p for _, _, p in visits) else 1


def main_attack(
    recipe: str, attackers: int, rounds: int, victims: int, demo: bool, raw: bool = False, limit_mb: int = 0
) -> int:
    import tempfile

    env = {"ATTNVIZ_DEMO": "1"} if demo else None
    with contextlib.ExitStack() as stack:
        group = stack.enter_context(cgroup.memory_cgroup(limit_mb)) if limit_mb else None
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        url, proc = stack.enter_context(streamlit_server(env=env, prefix=group.prefix if group else None))
        if group:
            group.start()
        report = asyncio.run(attacks.attack(url, proc.pid, recipe, attackers, rounds, victims, Path(tmp), raw))
    attacks.print_report(report)
    if group:
        cgroup.print_report(group.report)
    return 0 if not report.failures and not (group and group.report.oom_kills) else 1


def main_class(students: list[int], ramp: float, seconds: float, demo: bool, out: str | None, flood: int) -> int:
    env = {"ATTNVIZ_DEMO": "1"} if demo else None
    reports = []
    for n in students:  # one fresh server a class
        reports.append(hall.hall(n, ramp, seconds, env, flood))
        print(hall.hall_table(reports[-1:]), flush=True)
        for line in reports[-1].failures[:10]:
            print("  ", line)
    text = hall.hall_table(reports)
    print(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text + "\n")
    return 0 if not any(r.failures for r in reports) else 1


def main() -> int:
    os.environ.setdefault("ATTNVIZ_CHROMIUM", FULL)  # what a person's browser does, not the tests' shell
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--analyses", type=int, default=200)
    ap.add_argument("--max-seconds", type=float, default=600)
    ap.add_argument("--out")
    ap.add_argument("--scenario", choices=("load", "stall", "cold", "class", "paste", *attacks.RECIPES), default="load")
    ap.add_argument("--rounds", type=int, default=3, help="stall: new sentences typed by the third session")
    ap.add_argument("--attackers", type=int, default=6, help="recipes: attacking sessions")
    ap.add_argument("--victims", type=int, default=2, help="recipes: new visitors timed during the attack")
    ap.add_argument("--demo", action="store_true", help="recipes: run the server in demo mode")
    ap.add_argument(
        "--raw", action="store_true", help="flood: attackers as raw websocket clients (replies read, never drawn)"
    )
    ap.add_argument("--students", type=int, nargs="+", default=[30], help="class: one class of each size")
    ap.add_argument("--ramp", type=float, default=60.0, help="class: students open the page within this")
    ap.add_argument("--seconds", type=float, default=240.0, help="class: how long the class lasts")
    ap.add_argument("--flood", type=int, default=0, help="class: raw flood sessions of one visitor beside it")
    ap.add_argument(
        "--memory-limit", type=int, default=0, metavar="MB", help="recipes: the server in a memory cgroup (root)"
    )
    args = ap.parse_args()
    if args.scenario == "paste":  # four visitors paste ~7,000 words on SmolLM2 at once, ten times
        failures = hall.paste(args.rounds)
        print(f"{len(failures)} failures", *failures[:20], sep="\n  ")
        return 1 if failures else 0
    if args.scenario == "class":
        return main_class(args.students, args.ramp, args.seconds, args.demo, args.out, args.flood)
    if args.scenario in attacks.RECIPES:
        return main_attack(
            args.scenario, args.attackers, args.rounds, args.victims, args.demo, args.raw, args.memory_limit
        )
    if args.scenario == "stall":
        return main_stall(args.rounds)
    if args.scenario == "cold":
        return main_cold()
    report = run(args.sessions, args.analyses, args.max_seconds)
    text = table(report, args.sessions)
    print(text)
    for line in (report.failures + report.crosstalk)[:20]:
        print("  ", line)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    first = dict(report.rss_mb).get(20)
    last = report.rss_mb[-1][1] if report.rss_mb else None
    ok = not report.failures and not report.crosstalk
    if first is not None and last is not None and report.analyses >= 200:
        print(
            f"memory after 20: {first:.0f} MB, after {report.rss_mb[-1][0]}: {last:.0f} MB, growth {last - first:.0f} MB"
        )
        ok = ok and last - first <= 150
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
