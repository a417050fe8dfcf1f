"""The benchmarks run at 16 tokens as a smoke test: they must keep working and print their
tables. No timing is asserted (timings are figures to read, not to test). Each runs as
`python bench/NAME.py` would, in this process (tests/benchrun.py), and loads its model: `slow`,
out of `scripts/check --fast`, in CI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .benchrun import run_bench

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def bench(script: str, *args: str) -> str:
    return run_bench(script, *args)


def bench_in_a_new_interpreter(script: str, *args: str) -> str:
    """For bench_views.py: bertviz leaves a file of its own unclosed, which this process's
    warnings-as-errors would report; a new interpreter, as before."""
    out = subprocess.run(
        [sys.executable, f"bench/{script}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "HOME": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_engine_benchmark_smoke() -> None:
    table = bench("bench_engine.py", "--sizes", "16", "--repeat", "3")
    assert "device: cpu" in table
    row = next(line for line in table.splitlines() if line.startswith("| 16 |"))
    assert row.count("x |") == 2  # both ratios printed


def test_views_benchmark_smoke_against_bertviz(tmp_path: Path) -> None:
    table = bench_in_a_new_interpreter("bench_views.py", "--sizes", "16", "--out", str(tmp_path / "views.md"))
    cells = next(line for line in table.splitlines() if line.startswith("| 16 |")).strip("| ").split(" | ")
    ours_mb, bertviz_mb = float(cells[1]), float(cells[3])
    assert 0 < ours_mb <= 0.3 and bertviz_mb > ours_mb  # sizes are deterministic: the budget holds
    assert cells[-1] == "cpu" and (tmp_path / "views.md").exists()


def test_explain_benchmark_smoke(tmp_path: Path) -> None:
    out = tmp_path / "explain.md"
    bench("bench_explain.py", "--sizes", "16", "--repeat", "2", "--out", str(out))
    text = out.read_text()
    assert "| 16 |" in text and "flow" in text
