"""bench/bench_generate.py runs at 16 positions as a smoke test (tests/benchrun.py, in this
process): it prints its table and writes it. No timing is asserted; the sizes it prints are
read back against their formulas."""

from __future__ import annotations

from pathlib import Path

import pytest

from .benchrun import run_bench

pytestmark = pytest.mark.slow


def test_generate_benchmark_smoke(tmp_path: Path) -> None:
    out = tmp_path / "generate.md"
    table = run_bench("bench_generate.py", "--positions", "16", "--steps", "2", "--repeat", "1", "--out", str(out))
    cells = next(line for line in table.splitlines() if line.startswith("| 16 |")).strip("| ").split(" | ")
    assert len(cells) == 9 and cells[3].endswith("x") and cells[5].endswith("x")
    assert cells[6] == f"{30 * 9 * 16 * 4 / 1024:,.0f}"  # a step's rows: layers x heads x positions x float32
    assert cells[8] == f"{30 * 3 * 64 * 2 * 4 * 16 / 2**20:.1f} / {30 * 9 * 64 * 2 * 4 * 16 / 2**20:.1f}"
    assert out.read_text(encoding="utf-8").startswith("# Writing token by token: costs")
