"""Where a command's CPU goes, by kind of process (issue 24.5): runs COMMAND, reads every
process's CPU time from /proc every INTERVAL seconds meanwhile, and prints the CPU-s of each kind
(the test workers, the app servers, Chromium's renderers, its GPU process, training children...)
beside the machine's busy CPU-s from /proc/stat over the same time.

    .venv/bin/python scripts/cpuwatch.py -- scripts/check
    .venv/bin/python scripts/cpuwatch.py --json out/cpu.json -- .venv/bin/pytest tests/test_browser.py

Unlike tests/cputime.py (a test's own process tree, split by test), this sees processes that no
ancestor of ours reaps, Chromium's renderers above all, which a whole run's per-test logs
missed for about half the machine's CPU. A process is counted from when it is first seen (what
one that was running before the command had spent is subtracted) to its last reading; one that
lives less than an interval, or spends after its last reading, is missed: the line "not seen"
is the machine's busy CPU-s less the sum, other users of the machine included."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
TOP_WIDTH = 160  # characters of a command line in --top's table

# The first rule that matches a command line names its kind.
KINDS = (
    ("chromium renderer", r"chrom.*--type=renderer"),
    ("chromium gpu", r"chrom.*--type=gpu-process"),
    ("chromium other", r"chrom"),
    ("playwright driver", r"playwright/driver"),
    ("app server", r"streamlit run"),
    ("training child", r"attnviz\.training\.child"),
    ("command line", r"-m attnviz\b|bin/attnviz\b"),
    ("ray", r"\bray\b"),
    ("pytest", r"pytest|execnet|exec\(eval\(sys\.stdin"),  # pytest-xdist's workers are execnet's
    ("mypy", r"\bmypy\b"),
    ("python, other", r"python"),
)


def kind(cmdline: str) -> str:
    for name, pattern in KINDS:
        if re.search(pattern, cmdline):
            return name
    return "other"


def machine_busy() -> float:
    """The machine's busy CPU-s since boot (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / TICK


def readings() -> dict[tuple[int, int], float]:
    """(pid, start tick) -> CPU-s spent so far, for every process now alive."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[(int(pid), int(fields[19]))] = (int(fields[11]) + int(fields[12])) / TICK
    return out


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


class Watch:
    """Readings every `interval` s in `thread`, from its start until `done` is set (then one more)."""

    def __init__(self, interval: float) -> None:
        self.interval, self.done = interval, threading.Event()
        self.first = readings()  # what each process had spent before: not ours
        self.last: dict[tuple[int, int], float] = {}
        self.names: dict[tuple[int, int], str] = {}
        self.commands: dict[tuple[int, int], str] = {}
        self.seen: Counter[tuple[int, int]] = Counter()  # readings of each process
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.done.is_set():
            self._read()
            self.done.wait(self.interval)
        self._read()

    def _read(self) -> None:
        for key, cpu in readings().items():
            if self.seen[key] < 4:  # a fork read before its exec would be named by its parent's command line
                self.commands[key] = command_line(key[0])
                self.names[key] = kind(self.commands[key])
            self.seen[key] += 1
            self.last[key] = cpu

    def by_kind(self) -> tuple[Counter[str], Counter[str]]:
        """CPU-s and number of processes of each kind."""
        cpu: Counter[str] = Counter()
        count: Counter[str] = Counter()
        for key, spent in self.last.items():
            name = self.names[key]
            cpu[name] += spent - self.first.get(key, 0.0)
            count[name] += 1
        return cpu, count

    def costliest(self, n: int) -> list[tuple[float, str, str]]:
        """The N processes that spent the most: (CPU-s, kind, command line)."""
        spent = [(cpu - self.first.get(key, 0.0), key) for key, cpu in self.last.items()]
        top = sorted(spent, reverse=True)[:n]
        return [(cpu, self.names[key], self.commands.get(key, "")) for cpu, key in top]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--interval", type=float, default=0.25, help="seconds between readings (default 0.25)")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    ap.add_argument("--top", type=int, default=0, metavar="N", help="also list the N costliest processes")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("give a command to run after --")
    watch = Watch(args.interval)
    busy0, wall0 = machine_busy(), time.monotonic()
    watch.thread.start()
    try:
        rc = subprocess.call(command)
    except OSError as exc:  # no such program, or not executable
        print(f"cpuwatch: cannot run {command[0]!r}: {exc.strerror}", file=sys.stderr)
        return 127
    finally:
        watch.done.set()
        watch.thread.join()
    busy, wall = machine_busy() - busy0, time.monotonic() - wall0
    cpu, count = watch.by_kind()
    seen = sum(cpu.values())
    rows = [(name, spent, count[name]) for name, spent in cpu.most_common() if spent >= 0.05]
    print(f"\n{' '.join(command)}: exit {rc}, {wall:.0f} s, the machine busy {busy:.0f} CPU-s", file=sys.stderr)
    print("| kind | CPU-s | share | processes |\n|---|---:|---:|---:|", file=sys.stderr)
    for name, spent, n in rows:
        print(f"| {name} | {spent:.1f} | {spent / max(busy, 1e-9):.0%} | {n} |", file=sys.stderr)
    print(f"| not seen | {busy - seen:.1f} | {(busy - seen) / max(busy, 1e-9):.0%} | |", file=sys.stderr)
    if args.top > 0:
        print(f"\nthe {args.top} costliest processes\n| CPU-s | kind | command line |\n|---:|---|---|", file=sys.stderr)
        for spent, name, cmd in watch.costliest(args.top):
            shown = " ".join(cmd.split())[:TOP_WIDTH].replace("|", r"\|")  # one line: `python -c` code has newlines
            print(f"| {spent:.1f} | {name} | {shown} |", file=sys.stderr)
    if args.json:
        figures = {"command": command, "exit": rc, "wall_s": wall, "busy_cpu_s": busy}
        figures["kinds"] = {name: {"cpu_s": spent, "processes": n} for name, spent, n in rows}
        args.json.write_text(json.dumps(figures, indent=1))
    return rc


if __name__ == "__main__":
    sys.exit(main())
