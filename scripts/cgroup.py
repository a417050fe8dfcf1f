"""A memory cgroup for the server in a load recipe: the limit a container sets (`docker run
--memory=1500m`), so a recipe can show what the demo does under its limit rather than on a machine
with 24 GB free.

Under a limit the kernel first takes back clean file pages (SmolLM2's weights are a read-only map
of its float32 cache file: models/smollm2.py) and kills a process only when the anonymous memory it
cannot take back does not fit. So the figures that decide are the OOM kills and the peak of
anonymous memory; the peak of all charged memory is the limit itself once the page cache fills it.

Needs root and a memory controller: cgroup v1 (/sys/fs/cgroup/memory) or v2 (/sys/fs/cgroup with
memory in cgroup.controllers; written to the kernel's documentation, tested only on v1, which this
project's machines have). The server joins before it starts (the command prefix), so every
page it touches from its first import on is charged here. Linux kernel docs: cgroup-v1/memory.rst,
admin-guide/cgroup-v2.rst ("memory.max", "memory.peak", "memory.events").
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

V1 = Path("/sys/fs/cgroup/memory")
V2 = Path("/sys/fs/cgroup")


@dataclass
class CgroupReport:
    limit_mb: int
    peak_charged_mb: float = 0.0  # every page charged: anonymous memory and page cache
    peak_anon_mb: float = 0.0  # what the kernel cannot take back without killing
    oom_kills: int = 0
    reclaims: int = 0  # v1 failcnt: times the limit was hit and the kernel reclaimed
    caches_dropped: bool = False
    notes: list[str] = field(default_factory=list)


class MemoryCgroup:
    """A fresh memory cgroup limited to `limit_mb`; `prefix` starts a command inside it."""

    def __init__(self, limit_mb: int, drop_caches: bool = True) -> None:
        self.v1 = V1.is_dir()
        if not self.v1 and "memory" not in _read(V2 / "cgroup.controllers"):
            raise RuntimeError("no memory cgroup controller here")
        self.path = (V1 if self.v1 else V2) / f"attnviz-recipe-{os.getpid()}"
        self.path.mkdir()  # PermissionError without root: the caller says so
        self.report = CgroupReport(limit_mb)
        try:  # v2 without memory in the parent's subtree_control has no memory.max
            (self.path / ("memory.limit_in_bytes" if self.v1 else "memory.max")).write_text(str(limit_mb * 2**20))
        except OSError:
            self.path.rmdir()
            raise
        self.report.caches_dropped = drop_caches and _drop_caches()
        self._done = threading.Event()
        self._watch = threading.Thread(target=self._sample, daemon=True)

    @property
    def prefix(self) -> list[str]:
        # the shell joins the cgroup and becomes the server (exec keeps the pid)
        return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.path)]

    def start(self) -> None:
        self._watch.start()

    def _sample(self) -> None:
        while not self._done.wait(0.2):
            stat = _stat(self.path / "memory.stat")
            anon = stat.get("rss" if self.v1 else "anon", 0) + stat.get("shmem", 0)
            self.report.peak_anon_mb = max(self.report.peak_anon_mb, anon / 2**20)

    def finish(self) -> CgroupReport:
        self._done.set()
        if self._watch.is_alive():
            self._watch.join()
        r = self.report
        if self.v1:
            r.peak_charged_mb = int(_read(self.path / "memory.max_usage_in_bytes") or 0) / 2**20
            r.oom_kills = _stat(self.path / "memory.oom_control").get("oom_kill", 0)
            r.reclaims = int(_read(self.path / "memory.failcnt") or 0)
        else:
            r.peak_charged_mb = int(_read(self.path / "memory.peak") or 0) / 2**20
            r.oom_kills = _stat(self.path / "memory.events").get("oom_kill", 0)
            r.reclaims = _stat(self.path / "memory.events").get("max", 0)
        return r

    def remove(self) -> None:
        for _ in range(50):  # the server's exit is seen by the cgroup a moment later
            with contextlib.suppress(OSError):
                self.path.rmdir()
                return
            time.sleep(0.1)


@contextlib.contextmanager
def memory_cgroup(limit_mb: int, drop_caches: bool = True) -> Iterator[MemoryCgroup]:
    group = MemoryCgroup(limit_mb, drop_caches)
    try:
        yield group
    finally:
        group.finish()
        group.remove()


def print_report(r: CgroupReport) -> None:
    print(f"in a memory cgroup of {r.limit_mb} MB (as `docker run --memory={r.limit_mb}m`):")
    print(f"  OOM kills: {r.oom_kills}; times the limit was reached and the kernel reclaimed: {r.reclaims}")
    print(f"  peak anonymous memory (what only the server can give back): {r.peak_anon_mb:.0f} MB")
    print(f"  peak charged memory (anonymous + page cache): {r.peak_charged_mb:.0f} MB")
    if not r.caches_dropped:
        print("  the page cache was not dropped first: files read before the run are charged elsewhere")


def _drop_caches() -> bool:
    """Empties the page cache so that the libraries' and weights' pages the server reads are charged
    to its cgroup, not to whoever read them first."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3")
        return True
    except OSError:
        return False


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _stat(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in _read(path).splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            out[key] = int(value)
    return out
