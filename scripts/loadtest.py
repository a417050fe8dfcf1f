"""Many users at once: N real browser sessions (Debian's chromium, Playwright) against one
`streamlit run app.py` on loopback, each analysing its own sentences again and again.

Checks that every session always sees its own tokens (no cross-talk through caches), that no
analysis fails, and that the server's memory levels off; prints latency percentiles and memory.
Bounded in count and time, loopback only.

    .venv/bin/python scripts/loadtest.py --sessions 8 --analyses 200 --out docs/loadtest.md
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser import CHROMIUM_ARGS, chromium_path, streamlit_server  # noqa: E402

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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--analyses", type=int, default=200)
    ap.add_argument("--max-seconds", type=float, default=600)
    ap.add_argument("--out")
    args = ap.parse_args()
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
