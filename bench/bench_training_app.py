"""The Training lab in the app against the CLI, same preset (issue 23.7: the app ran 3.5-7x slower).

    .venv/bin/python bench/bench_training_app.py                         # induction, 300 steps
    .venv/bin/python bench/bench_training_app.py --task copy --steps 300 --repeats 2
    .venv/bin/python bench/bench_training_app.py --out run.md             # and write the table
    .venv/bin/python bench/bench_training_app.py --gil --steps 200        # the cause, without a server

CLI: `python -m attnviz train --task T --steps N --seed 0` in a fresh process; its own clock
(`run.seconds`, what the summary prints) and the process's wall time. App: `streamlit run
app.py` and Debian's chromium driven by Playwright (tests/browser.py) open /training, set the
task and steps, press Train and wait for the finished message; the run's own clock is read
from that message ("... in S s"), and while it trains the CPU seconds of the server process
and of the browser's processes are sampled (psutil), so where the time goes is shown: the
training thread, the page's redraws on the server, or the browser drawing them. The app stops
a run whose held-out accuracy has plateaued (attnviz/training/plateau.py): the table gives the
steps each one ran and the time a step, the fair comparison.

The app trains in a child process (attnviz/training/child.py): the server's CPU column counts
its reaped children too. `--gil` shows why, in one process and no server: the same run alone in
a thread, beside a thread that runs Python 30 % of the time (as the server's script reruns and
event loop do), and in a child process beside that same thread.

Figures only, no assertions. The machine is shared: say so beside any figure you quote.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from tests.browser import FULL, browser, streamlit_server  # noqa: E402
from tests.test_browser import IDLE_JS  # noqa: E402

DONE = re.compile(r"(?:Trained|Stopped at step) ([\d,]+)\D.*?(?:in|after) ([\d.]+) s")
WAIT_S = 600


def cli_run(task: str, steps: int, seed: int) -> dict[str, float]:
    cmd = [sys.executable, "-m", "attnviz", "train", "--task", task, "--steps", str(steps), "--seed", str(seed)]
    start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = float(re.findall(r"^([\d.]+) s", out, re.M)[-1])
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"steps": steps, "seconds": seconds, "wall": wall, "cpu": cpu}


def _cpu(procs: list[psutil.Process]) -> float:
    """CPU seconds of these processes and of their children already reaped (the training child)."""
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)
        except psutil.Error:
            pass
    return total


def _busy(stop: threading.Event, duty: float = 0.3) -> None:
    """Python holding the GIL `duty` of the time, as a server's threads do between requests."""
    data = {"rows": list(range(2000)), "text": "x" * 1000}
    while not stop.is_set():
        start = time.perf_counter()
        while time.perf_counter() - start < duty * 0.1:
            json.dumps(data)
        stop.wait((1 - duty) * 0.1)


def gil_rows(task: str, steps: int, seed: int) -> list[str]:
    """The run's own clock: alone in a thread; beside a busy Python thread; in a child beside it."""
    from attnviz.training import TrainConfig, prepare, resume
    from attnviz.training.child import resume_in_child

    config = TrainConfig(task, steps, seed)
    resume(prepare(TrainConfig(task, 10, seed)))  # warm
    rows = [("alone, in this process", resume(prepare(config)).seconds)]
    stop = threading.Event()
    busy = threading.Thread(target=_busy, args=(stop,), daemon=True)
    busy.start()
    try:
        rows.append(("beside a busy Python thread, in this process", resume(prepare(config)).seconds))
        rows.append(("beside a busy Python thread, in a child process", resume_in_child(prepare(config), None).seconds))
    finally:
        stop.set()
        busy.join()
    lines = ["| where the run trains | run clock (s) | s a step |", "|---|---:|---:|"]
    return lines + [f"| {where} | {seconds:.1f} | {seconds / steps:.4f} |" for where, seconds in rows]


def _browser_procs(server_pid: int) -> list[psutil.Process]:
    """This bench's chromium (its Playwright driver's children), not other browsers on the machine."""
    mine = psutil.Process(os.getpid()).children(recursive=True)
    return [p for p in mine if "chrom" in (p.name() or "").lower() and p.pid != server_pid]


def app_run(chromium: Any, url: str, server: psutil.Process, task: str, steps: int) -> dict[str, float]:
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{url}/training")
        page.locator(".st-key-train_start button").wait_for(timeout=WAIT_S * 1000)
        page.wait_for_function(IDLE_JS, timeout=WAIT_S * 1000)
        if task != "induction":
            page.locator(".st-key-train_task").click()
            page.get_by_role("option", name=re.compile(task, re.I)).first.click()
            page.wait_for_timeout(1500)
        box = page.locator(".st-key-train_steps input")
        for _ in range(5):  # a first run still settling can redraw the box with its old value
            page.wait_for_function(IDLE_JS, timeout=WAIT_S * 1000)
            box.fill(str(steps))
            box.press("Enter")
            page.wait_for_timeout(1000)
            page.wait_for_function(IDLE_JS, timeout=WAIT_S * 1000)
            if box.input_value().replace(",", "") == str(steps):
                break
        else:
            raise RuntimeError(f"the steps box shows {box.input_value()!r}, not {steps}")
        before = [p for p in _browser_procs(server.pid)]
        cpu_server, cpu_browser = _cpu([server]), _cpu(before)
        start = time.perf_counter()
        page.locator(".st-key-train_start button").click()
        page.wait_for_function(
            "() => /(Trained|Stopped)[^]*? (in|after) [\\d.]+ s/.test(document.querySelector('.st-key-train_status')?.innerText ?? '')",
            timeout=WAIT_S * 1000,
            polling=500,
        )
        wall = time.perf_counter() - start
        text = page.locator(".st-key-train_status").inner_text()
        page.wait_for_function(IDLE_JS, timeout=WAIT_S * 1000)
        waited = re.search(r"(\d+) s were spent waiting", page.inner_text("body"))
        match = DONE.search(text)
        ran, seconds = (int(match.group(1).replace(",", "")), float(match.group(2))) if match else (steps, wall)
        return {
            "steps": ran,
            "seconds": seconds,
            "wall": wall,
            "waited": float(waited.group(1)) if waited else 0.0,
            "server_cpu": _cpu([server]) - cpu_server,
            "browser_cpu": _cpu(_browser_procs(server.pid)) - cpu_browser,
            "message": text.strip().splitlines()[0][:160],
        }  # type: ignore[dict-item]
    finally:
        page.close()


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("ATTNVIZ_CHROMIUM", FULL)  # what a person's browser does, not the tests' shell
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", default="induction")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--out", help="also write the table (with the command) to this file")
    p.add_argument("--gil", action="store_true", help="only the in-process experiment (no server, no browser)")
    args = p.parse_args(argv)
    if args.gil:
        load = f"load average {os.getloadavg()[0]:.1f} at the start (shared machine)"
        print("\n".join([f"{os.cpu_count()} CPUs, {load}", "", *gil_rows(args.task, args.steps, args.seed)]))
        return 0
    cli = [cli_run(args.task, args.steps, args.seed) for _ in range(args.repeats)]
    app = []
    with streamlit_server() as (url, proc), browser() as chromium:
        server = psutil.Process(proc.pid)
        for _ in range(args.repeats):
            app.append(app_run(chromium, url, server, args.task, args.steps))
    lines = [
        f"`{' '.join(['python', 'bench/bench_training_app.py', *(argv or sys.argv[1:])])}`",
        "",
        f"{platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end (shared machine)",
        "",
        "| where | steps run | run clock (s) | of which waiting in the lane (s) | wall (s) | s a step | CPU of the process (s) | browser CPU (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in cli:
        lines.append(
            f"| CLI | {r['steps']:,} | {r['seconds']:.1f} | | {r['wall']:.1f} | {r['seconds'] / r['steps']:.4f}"
            f" | {r['cpu']:.1f} | |"
        )
    for r in app:
        lines.append(
            f"| app | {int(r['steps']):,} | {r['seconds']:.1f} | {r['waited']:.0f} | {r['wall']:.1f} | {r['seconds'] / r['steps']:.4f}"
            f" | {r['server_cpu']:.1f} | {r['browser_cpu']:.1f} |"
        )
    per_step = statistics.median(r["seconds"] / r["steps"] for r in app) / statistics.median(
        r["seconds"] / r["steps"] for r in cli
    )
    lines += ["", f"app / CLI, seconds a step (medians): {per_step:.2f}x"]
    lines += [f"- app message: {r['message']}" for r in app]
    table = "\n".join(lines)
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
