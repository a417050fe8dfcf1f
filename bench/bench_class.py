"""A class of 30 on the 2-core machine (issue 51): students join over about a minute and answer
the lesson's step 1 wrong, then right; how long an answer takes to reach the teacher's dashboard,
and what the server costs meanwhile.

    .venv/bin/python bench/bench_class.py                      # 30 students: 6 real tabs + 24 simulated
    .venv/bin/python bench/bench_class.py --real 30            # every student a real tab (browser-bound here)
    .venv/bin/python bench/bench_class.py --students 3 --spread 5 --out run.md

One `streamlit run app.py` (ATTNVIZ_DATA_DIR a temporary folder). The class is created through
the store (`attnviz.classes.ClassStore` on the server's SQLite file); the teacher's dashboard is
open in chromium (`/class?class=CODE&teacher=SECRET`), where a timer in the page reads its
Answers metric every POLL_MS and notes each change with the time (Date.now()).

A real student is a browser context of its own (a new visitor) in one chromium driven by async
Playwright: the join link, a name, the lesson, then a wrong count of tokens and Enter, "saved",
the right count. A simulated student joins and records through the store in this process as the
page would (the same `lesson.check` verdict, the hint a first wrong answer is told, the same
label): its answers reach the database and the dashboard, but its page costs the server nothing.
30 real tabs on 2 cores measure chromium, not the server: the joins took 1.5-2.5 minutes and
most answers timed out (results_class.md), hence 6 real tabs by default.

An answer's delay to the dashboard: from its commit (the answers table's `at`, UTC, the same
clock as Date.now() on this machine) to the first reading of the Answers metric that counts it
(the metric only grows: the k-th answer committed is shown once the metric reads k or more).
The dashboard re-reads the database every 3 s, so about half of that is expected. A real
student's own wait: Enter to "saved", for answers checked at the first Enter; an Enter that
brings no check within RESEND_S is counted apart and sent again. The student page's watch
(classroom.py, every 4 s) drops a first answer typed after one of its ticks (`--think 6` shows
it on every student; bench/results_class.md), so students answer after THINK_S by default.
Server RSS is the whole process tree's (psutil), sampled every 0.5 s; CPU is the tree's user +
system seconds over the run. Figures only; exits 1 if a student failed or an answer went unseen.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from tests.browser import ARTIFACTS, CHROMIUM_ARGS, chromium_path, streamlit_server  # noqa: E402
from tests.test_browser import IDLE_JS  # noqa: E402

SENTENCE = "The gardener thanked the builder because he had fixed the gate."
MODEL = "minilm"
POLL_MS = 200
LOAD_MS = 300_000  # a first lesson on a busy 2-core machine: torch, the model, the page
WAIT_MS = 120_000
RESEND_S = 20  # no verdict this long after Enter: the answer was dropped
THINK_S = 2.0  # a student reads the question before answering: under the student page's 4 s watch (see below)
METRIC_JS = """(label) => { const m = [...document.querySelectorAll('.st-key-class_board [data-testid="stMetric"]')]
  .find(e => e.querySelector('[data-testid="stMetricLabel"]')?.innerText.trim() === label);
  const v = m?.querySelector('[data-testid="stMetricValue"]')?.innerText.trim(); return v ? Number(v) : null; }"""
WATCH_JS = (
    "([ms, label]) => { window.__seen = []; const read = "
    + METRIC_JS
    + """;
  setInterval(() => { const n = read(label); const last = window.__seen.at(-1);
    if (n !== null && (!last || last[1] !== n)) window.__seen.push([Date.now(), n]); }, ms); }"""
)
SAVED_JS = """([before, saved]) => { const t = document.querySelector('.st-key-lesson_verdict_tokens')?.innerText ?? '';
  return t !== before && t.includes(saved); }"""
# the lesson's run has ended with step 1's question on the page (once: a rerun can show two for a moment)
ASKED_JS = f"() => ({IDLE_JS})() && document.querySelectorAll('.st-key-lesson_q_tokens input').length === 1"
VERDICT_JS = "() => document.querySelector('.st-key-lesson_verdict_tokens')?.innerText ?? ''"


@dataclass
class Run:
    students: int
    real: int
    spread: float
    think: float = THINK_S
    saved_s: list[float] = field(default_factory=list)  # real tabs: Enter to "saved", answers checked at once
    join_s: list[float] = field(default_factory=list)  # real tabs: join link opened to the question shown
    failures: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)  # real tabs: an Enter whose answer the page never checked
    rss_mb: list[float] = field(default_factory=list)
    rss_end_mb: float = 0.0
    cpu_s: float = 0.0
    seconds: float = 0.0
    delays: list[float] = field(default_factory=list)  # each answer: commit to the dashboard counting it
    answers: int = 0
    shown: int = 0  # the dashboard's last reading
    load: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())


@dataclass(frozen=True)
class Lesson:
    """What the page would check an answer against: the class sentence's step 1."""

    code: str
    secret: str
    n: int
    look: Any


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))] if xs else float("nan")


def tree(pid: int) -> list[psutil.Process]:
    proc = psutil.Process(pid)
    return [proc, *proc.children(recursive=True)]


def cpu_seconds(pid: int) -> float:
    total = 0.0
    for p in tree(pid):
        try:
            times = p.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def rss_mb(pid: int) -> float:
    total = 0
    for p in tree(pid):
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total / 2**20


async def sample_rss(pid: int, run: Run, stop: asyncio.Event) -> None:
    while not stop.is_set():
        run.rss_mb.append(rss_mb(pid))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.5)


def open_class(data_dir: Path) -> Lesson:
    """The class, started through the store on the server's database, and step 1's facts."""
    import attnviz
    from attnviz import lesson
    from attnviz.classes import ClassSpec, ClassStore, database_url

    store = ClassStore(database_url("", str(data_dir)))
    started = store.create(ClassSpec("bench", "en", {"en": (SENTENCE, MODEL)}, max_students=200))
    store.close()
    att = attnviz.load_model(MODEL, device="cpu").attend(SENTENCE)
    query, _found = lesson.lesson_query(att, "en")
    return Lesson(started.info.code, started.secret, att.n, lesson.Facts.of(att, lesson.look_head(att, query)))


async def real_student(browser: Any, url: str, c: Lesson, i: int, run: Run) -> None:
    from attnviz import i18n

    context = await browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = await context.new_page()
        page.set_default_timeout(WAIT_MS)
        t0 = time.monotonic()
        await page.goto(f"{url}/lesson?join={c.code}", timeout=LOAD_MS)
        await page.locator(".st-key-class_join").wait_for(timeout=LOAD_MS)
        await page.wait_for_function(IDLE_JS, timeout=LOAD_MS, polling=100)
        await page.locator(".st-key-class_name_input input").fill(f"student {i + 1} (real)")
        await page.locator(".st-key-class_join button").first.click()
        await page.locator(".st-key-class_banner").wait_for(timeout=WAIT_MS)
        await page.wait_for_function(ASKED_JS, timeout=LOAD_MS, polling=100)
        run.join_s.append(time.monotonic() - t0)
        saved = i18n.t("class.saved", "en")
        for answer in (c.n - 1, c.n):
            await asyncio.sleep(run.think)
            await submit(page, answer, saved, f"student {i + 1}", run)
    except Exception as exc:  # a student whose lesson or answer did not come is the figure's failure
        run.failures.append(f"real student {i + 1}: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
    finally:
        await context.close()


async def submit(page: Any, answer: int, saved: str, who: str, run: Run) -> None:
    """Type `answer` into step 1's box and Enter, until the page says "saved". An Enter whose
    answer the page never checks (RESEND_S without a verdict) is counted in `run.lost`, and the
    student does what a person would: Enter again, then reload the page (their link keeps their
    place) and type it again."""
    box = page.locator(".st-key-lesson_q_tokens input")
    t0 = time.monotonic()
    for attempt, how in enumerate(("typed", "Enter again", "typed after a reload")):
        before = await page.evaluate(VERDICT_JS)
        if how != "Enter again":
            await box.fill(str(answer))
        await box.press("Enter")
        try:
            await page.wait_for_function(SAVED_JS, arg=[before, saved], timeout=RESEND_S * 1000, polling=50)
            if attempt == 0:
                run.saved_s.append(time.monotonic() - t0)
            await page.wait_for_function(IDLE_JS, timeout=WAIT_MS, polling=100)
            return
        except Exception:
            run.lost.append(f"{who}: answer {answer} {how}, not checked")
            if attempt == 0:
                ARTIFACTS.mkdir(exist_ok=True)
                await page.screenshot(
                    path=str(ARTIFACTS / f"bench-class-{who.split()[-1]}-{answer}.png"), full_page=True
                )
        if attempt == 1:
            await page.reload(timeout=LOAD_MS)
            await page.wait_for_function(ASKED_JS, timeout=LOAD_MS, polling=100)
    raise AssertionError(f"answer {answer} never saved")


def sim_answers(c: Lesson) -> list[Any]:
    """A wrong count then the right one, as the page records them (lesson_steps._verdict: a first
    wrong answer is told the hint, a right one its why)."""
    from attnviz import lesson
    from attnviz.classes import Given

    given = []
    for value in (c.n - 1, c.n):
        verdict = lesson.check("tokens", value, c.look, "en")
        shown = verdict if verdict.right else lesson.hint("tokens", c.look)
        label = lesson.answer_label("tokens", value, c.look, "en")
        given.append(Given("tokens", label, verdict.right, shown.key, dict(shown.fields), SENTENCE))
    return given


async def sim_student(store: Any, c: Lesson, i: int, run: Run) -> None:
    try:
        _student, token = await asyncio.to_thread(store.join, c.code, f"student {i + 1} (simulated)", "en")
        for given in sim_answers(c):
            await asyncio.sleep(run.think)
            await asyncio.to_thread(store.record, c.code, token, given)
    except Exception as exc:
        run.failures.append(f"simulated student {i + 1}: {type(exc).__name__}: {exc}")


async def teacher(browser: Any, url: str, c: Lesson) -> Any:
    """The dashboard, open and watched by its in-page timer."""
    from attnviz import i18n

    context = await browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
    page = await context.new_page()
    await page.goto(f"{url}/class?class={c.code}&teacher={c.secret}", timeout=LOAD_MS)
    await page.locator(".st-key-class_board").wait_for(timeout=LOAD_MS)
    await page.evaluate(WATCH_JS, [POLL_MS, i18n.t("class.answers", "en")])
    return page


async def arrive(start: float, i: int, run: Run) -> None:
    """Wait for student i's arrival: evenly over the spread, the first at once."""
    at = start + (run.spread * i / max(1, run.students - 1) if run.students > 1 else 0.0)
    await asyncio.sleep(max(0.0, at - time.monotonic()))


async def class_of(url: str, pid: int, data_dir: Path, c: Lesson, run: Run) -> None:
    from playwright.async_api import async_playwright

    from attnviz.classes import ClassStore, database_url

    store = ClassStore(database_url("", str(data_dir)))
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample_rss(pid, run, stop))
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            board = await teacher(browser, url, c)
            cpu0, t0 = cpu_seconds(pid), time.monotonic()
            run.load = (os.getloadavg(), ())

            async def student(i: int) -> None:
                await arrive(t0, i, run)
                if _is_real(i, run):
                    await real_student(browser, url, c, i, run)
                else:
                    await sim_student(store, c, i, run)

            await asyncio.gather(*(student(i) for i in range(run.students)))
            run.answers = len(store.answers(c.code, c.secret))
            await settle(board, run)
            run.seconds, run.cpu_s = time.monotonic() - t0, cpu_seconds(pid) - cpu0
            run.load = (run.load[0], os.getloadavg())
            seen = await board.evaluate("() => window.__seen")
            delays(seen, store.answers(c.code, c.secret), run)
            run.shown = seen[-1][1] if seen else 0
        finally:
            stop.set()
            await sampler
            run.rss_end_mb = rss_mb(pid)
            await browser.close()
            store.close()


def _is_real(i: int, run: Run) -> bool:
    """Real tabs spread among the arrivals (every k-th student), not all first."""
    if run.real >= run.students:
        return True
    step = run.students / max(1, run.real)
    return any(int(j * step) == i for j in range(run.real))


async def settle(board: Any, run: Run, timeout: float = 30.0) -> None:
    """Wait until the dashboard counts every answer the database holds (or the timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = await board.evaluate("() => window.__seen")
        if seen and seen[-1][1] >= run.answers:
            return
        await asyncio.sleep(0.5)


def delays(seen: list[list[float]], answers: list[Any], run: Run) -> None:
    """Each answer's delay: its commit to the first reading that counts it."""
    committed = sorted(a.at.timestamp() for a in answers)
    for k, at in enumerate(committed, start=1):
        shown = next((ms / 1000 for ms, n in seen if n >= k), None)
        if shown is None:
            run.failures.append(f"answer {k} never reached the dashboard")
        else:
            run.delays.append(shown - at)


def table(run: Run) -> str:
    def s(xs: list[float], p: float) -> str:
        return f"{percentile(xs, p):.2f}" if xs else "-"

    peak = max(run.rss_mb, default=float("nan"))
    sim = run.students - min(run.real, run.students)
    cores = run.cpu_s / run.seconds if run.seconds else float("nan")
    load = " / ".join(", ".join(f"{x:.1f}" for x in la) for la in run.load)
    return "\n".join([
        f"{run.students} students ({min(run.real, run.students)} real browser tabs, {sim} simulated through the store), "
        f"arrivals over {run.spread:.0f} s, {run.answers} answers in {run.seconds:.0f} s, "
        f"{len(run.failures)} failures; load average at start / end: {load}",
        "",
        "| measure | p50 | p95 | max | n |",
        "|---|---:|---:|---:|---:|",
        f"| answer committed -> dashboard shows it (s) | {s(run.delays, 50)} | {s(run.delays, 95)} | "
        f"{max(run.delays, default=float('nan')):.2f} | {len(run.delays)} |",
        f"| real tab: Enter -> \"saved\" (s) | {s(run.saved_s, 50)} | {s(run.saved_s, 95)} | "
        f"{max(run.saved_s, default=float('nan')):.2f} | {len(run.saved_s)} |",
        f"| real tab: join link opened -> step 1's question (s) | {s(run.join_s, 50)} | {s(run.join_s, 95)} | "
        f"{max(run.join_s, default=float('nan')):.2f} | {len(run.join_s)} |",
        "",
        "| server (process tree) | value |",
        "|---|---:|",
        f"| RSS peak (MB) | {peak:.0f} |",
        f"| RSS at the end (MB) | {run.rss_end_mb:.0f} |",
        f"| CPU over the run (s) | {run.cpu_s:.0f} ({cores:.2f} cores on average) |",
        f"| dashboard's last Answers reading / answers in the database | {run.shown} / {run.answers} |",
        "",
        f"Real tabs: {len(run.lost)} Enters brought no check of the answer (none within {RESEND_S} s; "
        f"{len(run.saved_s)} answers were checked and saved at the first Enter); each was sent again "
        f"(Enter, then a reload and typed again). Students thought {run.think:.0f} s before each answer.",
    ])  # fmt: skip


def machine() -> str:
    import streamlit

    return (
        f"{os.cpu_count()} CPUs ({platform.machine()}), {psutil.virtual_memory().total / 2**30:.0f} GiB RAM; "
        f"Python {platform.python_version()}, streamlit {streamlit.__version__}; browser {Path(chromium_path()).name}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--real", type=int, default=6, help="real browser tabs among them, the rest simulated")
    ap.add_argument("--spread", type=float, default=60.0, help="seconds over which the students arrive")
    ap.add_argument("--think", type=float, default=THINK_S, help="seconds a student waits before each answer")
    ap.add_argument("--out", help="also write the table to this file")
    args = ap.parse_args()
    run = Run(args.students, max(0, min(args.real, args.students)), args.spread, args.think)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        c = open_class(data)
        env = {"ATTNVIZ_DATA_DIR": str(data)}
        with streamlit_server(env=env, args=["--server.fileWatcherType=none"]) as (url, proc):
            asyncio.run(class_of(url, proc.pid, data, c, run))
    text = table(run)
    print(text)
    print(f"\nmachine: {machine()}")
    for line in (run.failures + run.lost)[:30]:
        print("  ", line)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 1 if run.failures or run.shown < run.answers else 0


if __name__ == "__main__":
    sys.exit(main())
