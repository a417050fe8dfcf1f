"""A class of N: N simple clients, each its own visitor (cookie) on one websocket session, open
the lesson or the explorer within the first `ramp` seconds, then send a short sentence of their
own every 20-40 s until `seconds` have passed, reading every reply and drawing nothing (the
server's part of a lecture hall; 120 real chromium tabs would measure the browsers on this
machine, not the server).

Timed: opening a page (connect -> the first run's script_finished) and each answer (the new
sentence sent -> its run's script_finished, every token of it in the page's token list);
the server's memory (RSS of its process tree) every 0.25 s.

    .venv/bin/python scripts/loadtest.py --scenario class --students 120 --seconds 240
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import random
import re
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from scripts.attacks import AttackReport, _raw_flood, _rerun_message, _Sampler, _sentence_box, _until_finished

__all__ = ["HallReport", "hall", "hall_table", "paste"]

T = TypeVar("T")
THINK_S = (20.0, 40.0)  # seconds between one student's sentences
PAGES = ("lesson", "")  # page_name of a rerun: "" is the explorer, served at "/"
WORDS = ["river", "bank", "money", "animal", "street", "tired", "wide", "dog", "man", "bites", "cat", "tree"]


@dataclass
class HallReport:
    students: int
    opens: list[float] = field(default_factory=list)
    answers: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    start_rss_mb: float = 0.0
    peak_rss_mb: float = 0.0
    end_rss_mb: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average at the start and at the end
    seconds: float = 0.0
    cpu_s: float = 0.0  # the server tree's CPU seconds over the run
    flooders: int = 0  # raw flood sessions of one visitor beside the class (509-word sentences)
    flood_rounds: int = 0


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))] if xs else float("nan")


def _shows(deltas: list[Any], i: int, r: int) -> bool:
    """Whether the run sent this student's round's tokens (the token list, however it is drawn)."""
    sent = b" ".join(d.SerializeToString() for d in deltas).decode("utf-8", "replace")
    return re.search(rf"student\W+{i}\W+round\W+{r}\b", sent) is not None


async def _student(
    url: str, i: int, start_in: float, until: float, report: HallReport, think: tuple[float, float] = THINK_S
) -> None:
    from streamlit.proto.WidgetStates_pb2 import WidgetState
    from websockets.asyncio.client import connect

    rng = random.Random(i)
    page = PAGES[i % len(PAGES)]
    await asyncio.sleep(start_in)
    t0 = time.monotonic()
    try:
        async with connect(
            url.replace("http://", "ws://") + "/_stcore/stream",
            subprotocols=["streamlit"],  # type: ignore[list-item]
            additional_headers={"Cookie": f"attnviz_visitor={i + 1:032x}"},
            max_size=None,
            ping_interval=None,
        ) as ws:
            await ws.send(_rerun_message(page=page))
            box = _sentence_box(await _until_finished(ws, 120.0))
            report.opens.append(time.monotonic() - t0)
            r = 0
            while time.monotonic() + (wait := rng.uniform(*think)) < until:
                await asyncio.sleep(wait)
                text = f"student {i} round {r} saw the {WORDS[(i + r) % len(WORDS)]}"
                t = time.monotonic()
                await ws.send(_rerun_message([WidgetState(id=box, string_value=text)], page))
                deltas = await _until_finished(ws, 120.0)
                report.answers.append(time.monotonic() - t)
                if not _shows(deltas, i, r):
                    report.failures.append(f"student {i} round {r}: its tokens not shown")
                r += 1
    except Exception as exc:  # a refused connection, a timeout: counted, the class goes on
        report.failures.append(f"student {i}: {type(exc).__name__}: {exc}"[:200])


async def _hall(
    url: str, pid: int, students: int, ramp: float, seconds: float, flooders: int, think: tuple[float, float]
) -> HallReport:
    import psutil

    report = HallReport(students, flooders=flooders)
    flood = AttackReport("flood")
    floods = [asyncio.create_task(_raw_flood(url, i, 10_000, flood)) for i in range(flooders)]
    tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    cpu0 = sum(sum(p.cpu_times()[:2]) for p in tree)
    sampler = _Sampler(pid)
    sampler.start()
    report.load = (os.getloadavg()[0], 0.0)
    report.start_rss_mb = sum(p.memory_info().rss for p in tree) / 2**20
    t0 = time.monotonic()
    rng = random.Random(0)
    arrivals = sorted(rng.uniform(0.0, ramp) for _ in range(students))
    await asyncio.gather(*(_student(url, i, arrivals[i], t0 + seconds, report, think) for i in range(students)))
    report.seconds = time.monotonic() - t0
    for task in floods:
        task.cancel()
    await asyncio.gather(*floods, return_exceptions=True)
    report.flood_rounds = flood.attacker_rounds
    sampler.done.set()
    sampler.join()
    tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    report.cpu_s = sum(sum(p.cpu_times()[:2]) for p in tree) - cpu0
    report.peak_rss_mb = sampler.peak
    report.end_rss_mb = sum(p.memory_info().rss for p in tree) / 2**20
    report.load = (report.load[0], os.getloadavg()[0])
    return report


def _run(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """asyncio.run of a new coroutine, on a thread of its own where this one already runs an
    event loop (a test process that drove a browser)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def hall(
    students: int,
    ramp: float = 60.0,
    seconds: float = 240.0,
    env: dict[str, str] | None = None,
    flooders: int = 0,
    think: tuple[float, float] = THINK_S,
) -> HallReport:
    """One server (`streamlit run app.py`, its settings from `env`), one class of `students`, beside
    `flooders` raw sessions of one visitor sending 509-word sentences back to back."""
    from tests.browser import streamlit_server

    with streamlit_server(env=env) as (url, proc):
        return _run(lambda: _hall(url, proc.pid, students, ramp, seconds, flooders, think))


def hall_table(reports: list[HallReport]) -> str:
    rows = [
        "| students | flood | open p50 | open p95 | open max | answers | answer p50 | p95 | max | failures "
        "| RSS start -> peak -> end | server CPU | load start/end |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for r in reports:
        rows.append(
            f"| {r.students} | {f'{r.flooders} ({r.flood_rounds} rounds)' if r.flooders else '-'} | {percentile(r.opens, 50):.2f} s | {percentile(r.opens, 95):.2f} s "
            f"| {max(r.opens, default=float('nan')):.2f} s | {len(r.answers)} | {percentile(r.answers, 50):.2f} s "
            f"| {percentile(r.answers, 95):.2f} s | {max(r.answers, default=float('nan')):.2f} s | {len(r.failures)} "
            f"| {r.start_rss_mb:,.0f} -> {r.peak_rss_mb:,.0f} -> {r.end_rss_mb:,.0f} MB "
            f"| {r.cpu_s / max(r.seconds, 1e-9):.2f} cores | {r.load[0]:.1f} / {r.load[1]:.1f} |"
        )
    return "\n".join(rows)


def _failed(deltas: list[Any]) -> str | None:
    """What a run showed of a failure: an exception, or the app's 'something went wrong' line."""
    from attnviz.i18n import t

    wrong = t("err.unexpected", "en")
    for d in deltas:
        kind = d.new_element.WhichOneof("type")
        if kind == "exception":
            return f"exception {d.new_element.exception.type}: {d.new_element.exception.message[:120]}"
        if kind == "alert" and wrong in d.new_element.alert.body:
            return d.new_element.alert.body[:200]
    return None


async def _paster(url: str, i: int, round_: int, model: str, n_words: int) -> str | None:
    from streamlit.proto.WidgetStates_pb2 import WidgetState
    from websockets.asyncio.client import connect

    from scripts.attacks import words

    query = f"model={model}"
    async with connect(
        url.replace("http://", "ws://") + "/_stcore/stream",
        subprotocols=["streamlit"],  # type: ignore[list-item]
        additional_headers={"Cookie": f"attnviz_visitor={round_ * 100 + i + 1:032x}"},
        max_size=None,
    ) as ws:
        await ws.send(_rerun_message(query=query))
        box = _sentence_box(await _until_finished(ws, 300.0))
        text = f"paster {i} round {round_} " + words(n_words, round_ * 10 + i)
        await ws.send(_rerun_message([WidgetState(id=box, string_value=text)], query=query))
        failure = _failed(await _until_finished(ws, 600.0))
        return None if failure is None else f"round {round_} visitor {i}: {failure}"


def paste(
    rounds: int = 10, visitors: int = 4, model: str = "smollm2", n_words: int = 7000, env: dict[str, str] | None = None
) -> list[str]:
    """The concurrent long paste: `visitors` new visitors at once open the explorer on `model` and
    paste a different `n_words`-word text each, `rounds` times on one server; the failures shown."""
    from tests.browser import streamlit_server

    async def run(url: str) -> list[str]:
        failures: list[str] = []
        for r in range(rounds):
            got = await asyncio.gather(*(_paster(url, i, r, model, n_words) for i in range(visitors)))
            failures += [f for f in got if f]
            print(f"round {r + 1}/{rounds}: {sum(f is not None for f in got)} failed", flush=True)
        return failures

    with streamlit_server(env=env) as (url, _proc):
        return _run(lambda: run(url))
