"""Where a run's CPU goes, test by test (issue 24.5): with ATTNVIZ_TEST_CPU=DIR set, each test
process writes DIR/cpu-<worker>.tsv, a line a test: its id, its wall seconds, and the CPU-s its
process tree spent meanwhile (the test process itself, the app servers and Chromium it started,
the commands it ran and waited for), split by kind. On the 2-core CI machine the run is
CPU-bound, so these sums, not the tests' wall times, say what a change saves.

The total of a test is exact: the tree's CPU is the test process's own and its waited-for
children's (getrusage), plus each live descendant's own and its own waited-for children's, so a
process that ends moves its CPU to its parent's count and nothing is counted twice. The split by
kind is read from the live processes at the test's start and end: a process that ends inside
the test counts under its parent's kind ("reaped" for the test process's).

What it cannot see: a process whose CPU no ancestor of ours receives when it ends. Chromium's
renderers are the most of that: a whole run of 4d50bb9 kept the machine 99 % busy (1,919 CPU-s of
/proc/stat in 971 s) while these logs attributed 1,055 CPU-s. The ranking of tests holds; for a
run's total read /proc/stat."""

from __future__ import annotations

import os
import resource
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

KINDS = ("tests", "reaped", "chromium", "server", "python", "other")


def _kind(proc: psutil.Process) -> str:
    try:
        name, cmd = proc.name(), " ".join(proc.cmdline())
    except psutil.Error:
        return "other"
    if "chrom" in name or "chrome" in cmd.split(" ", 1)[0]:
        return "chromium"
    if "streamlit" in cmd and " run " in cmd:
        return "server"
    return "python" if "python" in name else "other"


def tree_cpu() -> Counter[str]:
    """CPU-s of this process's tree by kind (see the module's note)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    out: Counter[str] = Counter(tests=me.ru_utime + me.ru_stime, reaped=reaped.ru_utime + reaped.ru_stime)
    for proc in psutil.Process().children(recursive=True):
        try:
            t = proc.cpu_times()
        except psutil.Error:
            continue
        out[_kind(proc)] += t.user + t.system + t.children_user + t.children_system
    return out


class CpuLog:
    """The pytest plugin: registered by tests/conftest.py when ATTNVIZ_TEST_CPU is set."""

    def __init__(self, folder: str) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(folder).mkdir(parents=True, exist_ok=True)
        self.out = (Path(folder) / f"cpu-{worker}.tsv").open("a", encoding="utf-8", buffering=1)
        self.out.write("test\twall_s\ttotal_cpu_s\t" + "\t".join(KINDS) + "\n")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        start, t0 = tree_cpu(), time.monotonic()
        result = yield
        end = tree_cpu()
        delta = {k: end[k] - start[k] for k in KINDS}
        row = [item.nodeid, f"{time.monotonic() - t0:.2f}", f"{sum(delta.values()):.2f}"]
        self.out.write("\t".join(row + [f"{delta[k]:.2f}" for k in KINDS]) + "\n")
        return result
