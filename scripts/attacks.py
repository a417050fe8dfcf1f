"""The hostile-visitor recipes of issue 26 for `scripts/loadtest.py --scenario ...`: attackers in
real Chromium sessions against one `streamlit run app.py`, while new visitors ("victims") open
the explorer. Each recipe prints the server's peak RSS (process and children, sampled every
0.25 s) and every victim's wait until the explorer's charts are drawn.

- flood: ten sessions of ONE visitor (one browser context: one cookie) typing new 509-word
  sentences again and again;
- lab: sessions stepping the Lab's random seed (a model build each new seed), every section open;
- flow: sessions asking Explain for attention flow of a new sentence each run;
- training: sessions pressing Train again and again (who gets a run, a place, "busy");
- closed: sessions that start training and an explanation, then close their tabs: the
  server's CPU and threads in the seconds after;
- bomb: a Parquet compression bomb (2,048 rows of one 1 MiB string, zstd + dictionary,
  about 50 KB) uploaded on the Corpus page;
- heavy: issue 24.3's load test: every session a visitor of its own running the heaviest thing
  the demo allows, two sessions each: the faithfulness scoreboard (with occlusion and input x
  gradient), Value Zeroing, head importance (each on Explain, a new ~120-word text a round, the
  scoreboard computed with every one), a training run, a corpus upload (a file of more lines
  than the demo reads); what each tab was told while its work waited ("place N in the queue");
- links (issue 50.3): visitors opening shared links with three models and long texts, session i
  the i % 3rd: `/?model=smollm2&text=` ~3,000 words, e5-small with ~3,000 Chinese characters on
  the explorer and the lesson in turn, MiniLM on Explain with ~3,000 words, a new text each round;
- switching (issue 50.3): sessions on the explorer, each with its own ~400-word text, picking the
  next model in the sidebar every SWITCH_S seconds without waiting for the page.
Each recipe also prints the server's memory AFTER_S seconds after its browser has closed.
Bounded in count and time; loopback only.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from attnviz.app.state import LAB_SECTIONS
from tests.browser import CHROMIUM_ARGS, chromium_path

RAW_COOKIE = "attnviz_visitor=" + "f1" * 16  # the raw attackers' one visitor (32 hex digits)

WORDS = ["river", "bank", "money", "animal", "street", "tired", "wide", "dog", "man", "bites", "cat", "tree"]
# the explorer's charts (the heatmap and the all-heads grid; the head and graph views wait, not
# computed, in a closed expander: issue 24.1)
DRAWN_JS = """() => { const e = document.querySelector('.st-key-tokens code');
  return !!e && ['view_heatmap', 'view_grid'].every(k => {
    if (document.querySelector('.st-key-' + k + ' [data-attnviz-map][data-drawn]')) return true;  // the canvas map
    const g = document.querySelector('.st-key-' + k + ' .js-plotly-plot'); return !!g && !!g._fullLayout; }); }"""
IDLE_JS = """() => { const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.dataset.testScriptState === 'notRunning'; }"""
RECIPES = ("flood", "lab", "flow", "training", "closed", "bomb", "heavy", "links", "switching")
HEAVY_KINDS = ("scoreboard", "value_zeroing", "importance", "training", "corpus")  # heavy: session i runs i % 5
# the largest queue place a tab was shown: "place N in the queue" (work.run_long), "place N for the
# Training lab" (training), read every 250 ms (an init script runs as it is: hence the call)
QUEUE_PLACE = r"place (\d+) (in the queue|for the)"
QUEUE_JS = (
    "(() => { window.__place = 0; setInterval(() => {"
    f" const m = /{QUEUE_PLACE}/.exec((document.body && document.body.textContent) || '');"
    " if (m) window.__place = Math.max(window.__place, +m[1]); }, 250); })()"
)
TRAINED_JS = """() => !!document.querySelector('.st-key-train_status')
  && !document.querySelector('.st-key-train_stop')"""  # a run that ended (or was refused)
HEAVY_WAIT_MS = 600_000  # a heavy round can wait behind nine others on two cores
HAN = "注意力让模型在读每个词时看句子里的其他词语言学习猫狗河岸银行钱街道累宽树"  # links: e5-small's Chinese text
SWITCH_MODELS = ("model.minilm", "model.e5", "model.smollm2")  # switching: the sidebar's labels, in turn
SWITCH_S = 2.0  # switching: a new model picked this soon after the last, the page still running
AFTER_S = 15.0  # the memory read this long after the browser closed (sessions gone, relief run)


@dataclass
class AttackReport:
    recipe: str
    victim_waits: list[float] = field(default_factory=list)
    victim_served: list[float] = field(default_factory=list)  # until the server's last frame to them
    peak_rss_mb: float = 0.0
    start_rss_mb: float = 0.0
    peak_pss_mb: float = 0.0  # the same tree's proportional set size (_memory)
    peak_server_mb: float = 0.0  # the server process's own RSS (what its memory budget reads)
    peak_server_anon_mb: float = 0.0  # of it, anonymous memory: not file pages the kernel can drop
    at_peak: list[tuple[str, float, float]] = field(default_factory=list)  # (process, RSS, PSS) at the RSS peak
    attacker_rounds: int = 0
    notes: list[str] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)  # training: what each Train click got
    rounds_s: dict[str, list[float]] = field(default_factory=dict)  # heavy: each kind's rounds, wall
    places: dict[str, int] = field(default_factory=dict)  # heavy: the largest queue place each kind saw
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0  # from the attack's start to its last round
    end_rss_mb: float = 0.0  # AFTER_S after the browser closed


def _memory(pid: int, each: list[tuple[str, float, float]] | None = None) -> tuple[float, float]:
    """The server and its children's resident memory, summed, and their proportional set size
    (a page shared by k processes counts 1/k in each), in MB. The training children are forks
    of one forkserver (attnviz/training/child.py) and share its pages, which the RSS sum counts once
    per process: the PSS sum is the memory used. `each` gets (process, RSS, PSS) of each."""
    proc = psutil.Process(pid)
    rss = pss = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # a child that ended between the listing and the read
            info = p.memory_full_info()
            rss, pss = rss + info.rss, pss + info.pss
            if each is not None:
                name = "server" if p.pid == pid else " ".join(p.cmdline()[1:4])[:60] or p.name()
                each.append((name, info.rss / 2**20, info.pss / 2**20))
    return rss / 2**20, pss / 2**20


def _anon_mb(pid: int) -> float:
    """RssAnon + RssShmem of /proc/PID/status (proc(5)): the resident memory that is not a file's
    pages, which the kernel drops under pressure and reads again (SmolLM2's mapped weights)."""
    kb = 0
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("RssAnon:", "RssShmem:")):
                kb += int(line.split()[1])
    return kb / 1024


class _Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.peak_pss, self.peak_own, self.done = pid, 0.0, 0.0, 0.0, threading.Event()
        self.peak_anon = 0.0
        self.at_peak: list[tuple[str, float, float]] = []  # each process at the RSS sum's peak

    def run(self) -> None:
        while not self.done.wait(0.25):
            each: list[tuple[str, float, float]] = []
            try:
                rss, pss = _memory(self.pid, each)
            except psutil.Error:
                return
            if rss > self.peak:
                self.peak, self.at_peak = rss, each
            self.peak_pss = max(self.peak_pss, pss)
            self.peak_own = max(self.peak_own, next((r for name, r, _ in each if name == "server"), 0.0))
            self.peak_anon = max(self.peak_anon, _anon_mb(self.pid))


def words(n: int, seed: int) -> str:
    return " ".join(WORDS[(seed * 7 + i * (seed % 5 + 1)) % len(WORDS)] for i in range(n))


def bomb_parquet(path: Path, rows: int = 2048, size: int = 2**20) -> Path:
    """The 26.1 bomb: `rows` copies of one `size`-character string, zstd + dictionary (~50 KB)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = ("x" * (size - 4)) + "bomb"
    pq.write_table(pa.table({"text": pa.array([text] * rows)}), path, compression="zstd", use_dictionary=True)
    return path


async def _new_page(context: Any) -> Any:
    page = await context.new_page()
    page.set_default_timeout(120_000)
    return page


async def _flood(page: Any, url: str, i: int, r: int) -> None:
    if r == 0:
        await page.goto(url)
        await page.locator(".st-key-sentence_input textarea").wait_for(timeout=240_000)
    box = page.locator(".st-key-sentence_input textarea")
    await box.fill(f"attacker {i} round {r} " + words(505, i * 1000 + r))
    await box.press("Control+Enter")
    await page.wait_for_function(IDLE_JS, timeout=120_000)


async def _lab(page: Any, url: str, i: int, r: int) -> None:
    await page.goto(f"{url}/lab")
    await page.wait_for_function(IDLE_JS, timeout=240_000)
    for key in LAB_SECTIONS:  # the worst case: every section below the fold opened (closed by default)
        await page.locator(f".st-key-{key} summary").click()
        await page.wait_for_function(IDLE_JS, timeout=120_000)
    toggle = page.locator(".st-key-lab_random input")
    if not await toggle.is_checked():
        await page.locator(".st-key-lab_random label").click()
        await page.wait_for_function(IDLE_JS, timeout=120_000)
    seed = page.locator(".st-key-lab_seed input")
    await seed.fill(str(1000 * i + r + 1))
    await seed.press("Enter")
    await page.wait_for_function(IDLE_JS, timeout=120_000)


async def _flow(page: Any, url: str, i: int, r: int) -> None:
    text = f"flow {i} {r} " + words(80, i * 100 + r)  # under the one-row flow limit (96 tokens)
    await page.goto(f"{url}/explain?" + urllib.parse.urlencode({"text": text}))
    await page.wait_for_function(IDLE_JS, timeout=240_000)


def han(n: int, seed: int) -> str:
    """`n` Chinese characters, different for each seed."""
    return "".join(HAN[(seed * 7 + i * (seed % 5 + 1)) % len(HAN)] for i in range(n))


async def _links(page: Any, url: str, i: int, r: int) -> None:
    """A shared link opened, its page run to its end: which model and page by `i % 3`."""
    kind = i % 3
    if kind == 0:
        path, query = "", {"model": "smollm2", "text": f"links {i} {r} " + words(3000, i * 100 + r)}
    elif kind == 1:
        path, query = ("lesson" if r % 2 else ""), {"model": "e5-small", "text": f"{i} {r} " + han(3000, i * 100 + r)}
    else:
        path, query = "explain", {"model": "minilm", "text": f"links {i} {r} " + words(3000, i * 100 + r)}
    await page.goto(f"{url}/{path}?" + urllib.parse.urlencode(query))
    await _settle(page)


async def _switching(page: Any, url: str, i: int, r: int) -> None:
    """The next model picked in the sidebar, SWITCH_S after the last pick (its run not waited for)."""
    from attnviz import i18n

    if r == 0:
        await page.goto(f"{url}/?" + urllib.parse.urlencode({"text": f"switch {i} " + words(400, i)}))
        await _settle(page)
    label = i18n.t(SWITCH_MODELS[(i + r + 1) % len(SWITCH_MODELS)], "en")
    await page.locator(".st-key-model_choice [data-testid=stSelectbox]").click()
    await page.get_by_role("option", name=label, exact=True).click(timeout=60_000)
    await page.wait_for_timeout(SWITCH_S * 1000)


async def _train(page: Any, url: str, i: int, r: int, seen: dict[str, int]) -> None:
    if r == 0:
        await page.goto(f"{url}/training")
        await page.locator(".st-key-train_start button").wait_for(timeout=240_000)
    await page.locator(".st-key-train_start button").click()
    await page.wait_for_function(IDLE_JS, timeout=120_000)
    body = await page.locator('[data-testid="stMain"]').inner_text()
    for word, kind in (("Queued", "queued"), ("busy", "busy"), ("already", "one per visitor"), ("Step", "training")):
        if word in body:
            seen[kind] = seen.get(kind, 0) + 1
            break


async def _settle(page: Any) -> None:
    """The page's script run over, however long its heavy work waited in the queue."""
    await page.wait_for_timeout(300)
    await page.wait_for_function(IDLE_JS, timeout=HEAVY_WAIT_MS, polling=250)


async def _click_if(page: Any, selector: str) -> bool:
    button = page.locator(selector)
    if not await button.count():
        return False
    await button.first.click()
    await _settle(page)
    return True


async def _explain_heavy(page: Any, url: str, i: int, r: int, kind: str) -> None:
    """One round on Explain with a new text just under the demo's 128-token explanation limit:
    the page computes the contributions and the scoreboard on its own; then occlusion and
    input x gradient, Value Zeroing or head importance, whichever this session runs."""
    text = f"heavy {i} {r} " + words(118, i * 100 + r + 7)
    await page.goto(f"{url}/explain?" + urllib.parse.urlencode({"text": text}))
    await page.locator(".st-key-explain_scoreboard").wait_for(timeout=HEAVY_WAIT_MS)
    await _settle(page)
    if kind == "scoreboard":
        await _click_if(page, ".st-key-x_compute button")
    elif kind == "importance":
        await _click_if(page, ".st-key-abl_compute button")
    else:  # Value Zeroing: the contributions' method picker (its box opens the list; the input
        # inside it does not); under this load the list sometimes did not open: tried again
        option = page.get_by_role("option", name="Value Zeroing", exact=True)
        for attempt in range(3):
            await page.locator(".st-key-cx_method [data-testid=stSelectbox]").click()
            try:
                await option.click(timeout=30_000)
                break
            except Exception:
                if attempt == 2:
                    raise
                await page.keyboard.press("Escape")
        await page.locator(".st-key-cx_method input[value='Value Zeroing']").wait_for(timeout=60_000)
        await _settle(page)


def corpus_file(path: Path, lines: int, seed: int) -> Path:
    """A plain-text corpus of `lines` distinct sentences (what an upload of the demo's whole
    allowance reads)."""
    path.write_text("\n".join(f"line {seed} {k}: " + words(24, seed * 10_000 + k) for k in range(lines)) + "\n")
    return path


async def _corpus(page: Any, url: str, i: int, r: int, tmp: Path) -> None:
    """Upload a corpus and run it to its end (its grid, a refusal or an error)."""
    path = corpus_file(tmp / f"corpus-{i}-{r}.txt", 600, i * 100 + r)
    await page.goto(f"{url}/corpus")
    await _settle(page)
    await page.locator(".st-key-corpus_source label").filter(has_text="pload").click()
    await _settle(page)
    await page.locator(".st-key-corpus_upload input[type=file]").set_input_files(str(path))
    await page.locator(".st-key-corpus_upload_ready").wait_for(timeout=120_000)
    await _settle(page)
    await page.locator(".st-key-corpus_run button").click()
    ended = "[data-testid=stAlert], .st-key-corpus_grid, .st-key-corpus_resume"
    await page.locator(ended).first.wait_for(timeout=HEAVY_WAIT_MS)
    await _settle(page)


async def _heavy(page: Any, url: str, i: int, r: int, tmp: Path, report: AttackReport) -> None:
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    kind = HEAVY_KINDS[i % len(HEAVY_KINDS)]
    started = time.monotonic()
    if kind == "training":  # the demo's longest run (2,000 steps), to its end
        if r == 0:
            await page.goto(f"{url}/training")
            steps = page.locator(".st-key-train_steps input")
            await steps.fill("2000")
            await steps.press("Enter")
            await _settle(page)
        await _train(page, url, i, 1, report.outcomes)  # r=1: the page is open already
        # the run under way (queued or training: its Stop button), unless the click was refused;
        # a previous run's finished status must not read as this one's end
        with contextlib.suppress(PlaywrightTimeout):
            await page.locator(".st-key-train_stop").wait_for(timeout=60_000)
        await page.wait_for_function(TRAINED_JS, timeout=HEAVY_WAIT_MS, polling=500)
    elif kind == "corpus":
        await _corpus(page, url, i, r, tmp)
    else:
        await _explain_heavy(page, url, i, r, kind)
    report.rounds_s.setdefault(kind, []).append(time.monotonic() - started)
    place = int(await page.evaluate("() => window.__place || 0"))
    report.places[kind] = max(report.places.get(kind, 0), place)


def _rerun_message(widgets: list[Any] | None = None, page: str = "", query: str = "") -> bytes:
    """The rerun a tab sends: `page` by its name ("" is the explorer, served at "/"), the link's
    query, the widget states given."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    msg = BackMsg()
    msg.rerun_script.page_name = page
    msg.rerun_script.query_string = query
    for widget in widgets or []:
        msg.rerun_script.widget_states.widgets.append(widget)
    return msg.SerializeToString()


def _sentence_box(deltas: list[Any]) -> str:
    """The sentence box's widget id among a run's deltas (every page that analyses has one)."""
    return next(
        d.new_element.text_area.id
        for d in deltas
        if d.new_element.WhichOneof("type") == "text_area" and d.new_element.text_area.id.endswith("sentence_input")
    )


async def _until_finished(ws: Any, timeout: float = 180.0) -> list[Any]:
    """Every delta of one script run of a raw client, read and dropped (nothing drawn)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    deltas = []
    deadline = time.monotonic() + timeout
    while True:
        msg = ForwardMsg()
        msg.ParseFromString(await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic())))
        kind = msg.WhichOneof("type")
        if kind == "delta":
            deltas.append(msg.delta)
        elif kind == "script_finished" and msg.script_finished != msg.FINISHED_EARLY_FOR_RERUN:
            return deltas


async def _raw_flood(url: str, i: int, rounds: int, report: AttackReport) -> None:
    """One raw websocket session of the flooding visitor (one cookie): the same reruns a tab
    sends on Ctrl+Enter (the sentence box's new text), the replies read but never drawn."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState
    from websockets.asyncio.client import connect

    stream = url.replace("http://", "ws://") + "/_stcore/stream"
    async with connect(
        stream,
        subprotocols=["streamlit"],  # type: ignore[list-item]
        additional_headers={"Cookie": RAW_COOKIE},
        max_size=None,
    ) as ws:
        await ws.send(_rerun_message())
        deltas = await _until_finished(ws, 240.0)
        box = _sentence_box(deltas)
        for r in range(rounds):
            text = f"attacker {i} round {r} " + words(505, i * 1000 + r)
            try:
                await ws.send(_rerun_message([WidgetState(id=box, string_value=text)]))
                await _until_finished(ws)
                report.attacker_rounds += 1
            except Exception as exc:
                report.failures.append(f"raw attacker {i} round {r}: {type(exc).__name__}")


async def _victim(browser: Any, url: str, report: AttackReport) -> None:
    """A new visitor opens the explorer: the wait until its charts are drawn, and until
    the server had sent it everything (the last websocket frame before that: the server's part;
    the rest is the browser's own loading and drawing, on this same machine)."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await _new_page(context)
    last_frame = [0.0]
    page.on(
        "websocket", lambda ws: ws.on("framereceived", lambda _payload: last_frame.__setitem__(0, time.monotonic()))
    )
    t0 = time.monotonic()
    try:
        await page.goto(url)
        await page.wait_for_function(DRAWN_JS, timeout=180_000)
        report.victim_waits.append(time.monotonic() - t0)
        report.victim_served.append(last_frame[0] - t0)
    except Exception as exc:
        report.failures.append(f"victim: {type(exc).__name__}")
    await context.close()


async def _attackers(
    browser: Any, url: str, recipe: str, n: int, rounds: int, report: AttackReport, tmp: Path
) -> list[Any]:
    """Start the attackers; returns their tasks (they stop after `rounds` rounds each)."""
    one = await browser.new_context(viewport={"width": 1200, "height": 900})  # flood: one visitor
    seen = report.outcomes

    async def attacker(i: int) -> None:
        context = one if recipe == "flood" else await browser.new_context(viewport={"width": 1200, "height": 900})
        if recipe == "heavy":
            await context.add_init_script(QUEUE_JS)
        page = await _new_page(context)
        for r in range(rounds):
            try:
                if recipe == "heavy":
                    await _heavy(page, url, i, r, tmp, report)
                elif recipe == "flood":
                    await _flood(page, url, i, r)
                elif recipe == "lab":
                    await _lab(page, url, i, r)
                elif recipe == "flow":
                    await _flow(page, url, i, r)
                elif recipe == "links":
                    await _links(page, url, i, r)
                elif recipe == "switching":
                    await _switching(page, url, i, r)
                    if r == rounds - 1:
                        await _settle(page)
                else:
                    await _train(page, url, i, r, seen)
                report.attacker_rounds += 1
            except Exception as exc:
                lines = [line.strip() for line in str(exc).splitlines() if line.strip()] or [""]
                said = lines[0][:160] + (f" ... {lines[-1][:160]}" if len(lines) > 1 else "")  # Playwright's last step
                report.failures.append(f"attacker {i} round {r}: {type(exc).__name__}: {said}")

    return [asyncio.create_task(attacker(i)) for i in range(n)]


async def _closed(browser: Any, url: str, pid: int, n: int, report: AttackReport) -> None:
    """n tabs start a training run and the Explain page's flow, then close; the server's CPU
    and thread count are read over the 15 s after."""
    contexts = []
    for _ in range(n):
        context = await browser.new_context()
        page = await _new_page(context)
        await page.goto(f"{url}/training")
        await page.locator(".st-key-train_steps input").fill("2000")
        await page.locator(".st-key-train_steps input").press("Enter")
        await page.locator(".st-key-train_start button").click()
        contexts.append(context)
    proc = psutil.Process(pid)
    before = proc.num_threads()
    for context in contexts:
        await context.close()
    proc.cpu_percent(None)
    for second in range(15):
        await asyncio.sleep(1)
        report.notes.append(f"t+{second + 1}s cpu {proc.cpu_percent(None):.0f}% threads {proc.num_threads()}")
    report.notes.insert(0, f"threads while {n} tabs trained: {before}")


async def _bomb(browser: Any, url: str, tmp: Path, report: AttackReport) -> None:
    path = bomb_parquet(tmp / "bomb.parquet")
    report.notes.append(f"bomb file: {path.stat().st_size / 1024:.1f} KB")
    page = await _new_page(await browser.new_context())
    await page.goto(f"{url}/corpus")
    await page.wait_for_function(IDLE_JS, timeout=240_000)
    await page.locator(".st-key-corpus_source label").filter(has_text="pload").click()
    await page.wait_for_function(IDLE_JS, timeout=60_000)
    await page.locator(".st-key-corpus_upload input[type=file]").set_input_files(str(path))
    await page.locator(".st-key-corpus_upload_ready").wait_for(timeout=60_000)  # the server has it
    await page.wait_for_function(IDLE_JS, timeout=60_000)
    await page.locator(".st-key-corpus_run button").click()
    # the run's end: its refusal or failure (an alert), or its grid; then the page settles
    ended = "[data-testid=stAlert], .st-key-corpus_grid, .st-key-corpus_resume"
    await page.locator(ended).first.wait_for(timeout=300_000)
    await page.wait_for_function(IDLE_JS, timeout=300_000)
    report.notes.append(
        "page: " + (await page.locator('[data-testid="stMain"]').inner_text())[-300:].replace("\n", " ")
    )


async def attack(
    url: str, pid: int, recipe: str, attackers: int, rounds: int, victims: int, tmp: Path, raw: bool = False
) -> AttackReport:
    from playwright.async_api import async_playwright

    report = AttackReport(recipe)
    sampler = _Sampler(pid)
    report.start_rss_mb = _memory(pid)[0]
    sampler.start()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            warm = await _new_page(await browser.new_context())  # the model loaded before anyone is timed
            await warm.goto(url)
            await warm.wait_for_function(DRAWN_JS, timeout=240_000)
            report.start_rss_mb = _memory(pid)[0]
            steps: dict[str, Callable[[], Awaitable[None]]] = {
                "closed": lambda: _closed(browser, url, pid, attackers, report),
                "bomb": lambda: _bomb(browser, url, tmp, report),
            }
            if recipe in steps:
                await steps[recipe]()
                await _victim(browser, url, report)
            else:
                started = time.monotonic()
                if raw and recipe == "flood":
                    tasks = [asyncio.create_task(_raw_flood(url, i, rounds, report)) for i in range(attackers)]
                else:
                    tasks = await _attackers(browser, url, recipe, attackers, rounds, report, tmp)
                await asyncio.sleep(20)  # the attack under way: pages open, the first rounds sent
                for _ in range(victims):
                    await _victim(browser, url, report)
                await asyncio.gather(*tasks)
                report.seconds = time.monotonic() - started
        finally:
            await browser.close()
            await asyncio.sleep(AFTER_S)
            report.end_rss_mb = _memory(pid)[0]
            sampler.done.set()
    report.peak_rss_mb = max(sampler.peak, report.start_rss_mb)
    report.peak_pss_mb = sampler.peak_pss
    report.peak_server_mb = sampler.peak_own
    report.peak_server_anon_mb = sampler.peak_anon
    report.at_peak = sampler.at_peak
    return report


def print_report(report: AttackReport) -> None:
    waits = ", ".join(f"{w:.1f}" for w in report.victim_waits) or "none"
    print(f"recipe {report.recipe}: {report.attacker_rounds} attacker rounds in {report.seconds:.0f} s")
    print(
        f"server RSS: {report.start_rss_mb:.0f} MB before, peak {report.peak_rss_mb:.0f} MB,"
        f" {report.end_rss_mb:.0f} MB {AFTER_S:.0f} s after the browser closed"
    )
    print(f"  peak PSS (shared pages split between the processes sharing them): {report.peak_pss_mb:.0f} MB")
    print(f"  peak RSS of the server process alone (what its memory budget reads): {report.peak_server_mb:.0f} MB")
    print(
        f"    its peak anonymous memory (RSS less file pages such as mapped weights): {report.peak_server_anon_mb:.0f} MB"
    )
    if report.at_peak:
        print("  at the RSS peak (MB, RSS / PSS): " + "; ".join(f"{n} {r:.0f} / {p:.0f}" for n, r, p in report.at_peak))
    print(f"new visitors' waits until the explorer was drawn (s): {waits}")
    served = ", ".join(f"{w:.1f}" for w in report.victim_served) or "none"
    print(f"  of which until the server had sent them everything (s): {served}")
    if report.outcomes:
        print(f"Train clicks: {report.outcomes}")
    for kind, seconds in report.rounds_s.items():
        rounds = ", ".join(f"{s_:.0f}" for s_ in seconds)
        print(f"  {kind}: rounds of {rounds} s; largest queue place shown {report.places.get(kind, 0)}")
    for line in report.notes + report.failures[:20]:
        print("  ", line)
