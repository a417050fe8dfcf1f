"""bench/bench_long.py and bench/bench_flash.py as smoke tests at 64 tokens: they must keep working and
print their rows. No timing is asserted (timings are figures to read, not to test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .benchrun import run_bench

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_long_benchmark_smoke() -> None:
    stdout = run_bench("bench_long.py", "--model", "scratch", "--sizes", "64")
    row = next(line for line in stdout.splitlines() if line.startswith("| 64 |"))
    cells = row.strip("| ").split(" | ")
    assert cells[1] == "scratch 6 x 12 (kv 12)" and float(cells[-1]) == pytest.approx(
        6 * 12 * 64**2 * 4 / 2**30, abs=0.05
    )


@pytest.mark.slow
def test_flash_benchmark_smoke() -> None:
    stdout = run_bench("bench_flash.py", "--sizes", "64", "--repeat", "1")
    row = next(line for line in stdout.splitlines() if line.startswith("| 64 |"))
    assert "failed" not in row and row.count("|") == 7
