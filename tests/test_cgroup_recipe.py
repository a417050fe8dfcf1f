"""scripts/cgroup.py, the container's limit the round-4 memory recipes run under: a process whose
anonymous memory passes the limit is killed and counted, one under it is not, and file pages
mapped past the limit (as SmolLM2's float32 weights are: models/smollm2.py) are taken back by the
kernel instead of killing. The last is why the recipes judge a demo server by its OOM kills and its
peak anonymous memory (docs/RELIABILITY.md, item 3). Needs root and a memory controller."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scripts import cgroup

LIMIT_MB = 150


def _run_inside(code: str, tmp_path: Path) -> tuple[int, cgroup.CgroupReport]:
    try:
        group_cm = cgroup.memory_cgroup(LIMIT_MB, drop_caches=False)
        group = group_cm.__enter__()
    except (OSError, RuntimeError) as exc:
        pytest.skip(f"no memory cgroup can be made here: {exc}")
    try:
        group.start()
        done = subprocess.run(
            [*group.prefix, sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, timeout=120, check=False
        )
    finally:
        group_cm.__exit__(None, None, None)
    return done.returncode, group.report


def test_anonymous_memory_past_the_limit_is_killed(tmp_path: Path) -> None:
    code, report = _run_inside("b = bytearray(400 * 2**20)\nb[::4096] = b'x' * len(b[::4096])", tmp_path)
    assert code == -9
    assert report.oom_kills == 1


def test_anonymous_memory_under_the_limit_is_measured(tmp_path: Path) -> None:
    code, report = _run_inside(
        "import time\nb = bytearray(80 * 2**20)\nb[::4096] = b'x' * len(b[::4096])\ntime.sleep(1)", tmp_path
    )
    assert code == 0
    assert report.oom_kills == 0
    assert 80 <= report.peak_anon_mb < LIMIT_MB
    assert report.peak_charged_mb <= LIMIT_MB


def test_mapped_file_pages_past_the_limit_are_taken_back(tmp_path: Path) -> None:
    # the child writes and syncs a 400 MB file (so its pages are charged here), then maps it
    # read-only and touches every page: 2.7 times the limit, like weights mapped from a cache file
    code, report = _run_inside(
        """
        import mmap, os
        with open("weights.bin", "wb") as f:
            for _ in range(25):
                f.write(os.urandom(16 * 2**20)); f.flush(); os.fsync(f.fileno())
        with open("weights.bin", "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            total = sum(m[i] for i in range(0, len(m), 4096))
        """,
        tmp_path,
    )
    assert code == 0
    assert report.oom_kills == 0
    assert report.peak_charged_mb <= LIMIT_MB
    assert report.reclaims > 0  # the limit was reached and the kernel took pages back
