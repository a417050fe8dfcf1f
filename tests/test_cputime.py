"""tests/cputime.py, the per-test CPU log (ATTNVIZ_TEST_CPU): a descendant's CPU is counted while
it runs and, once it has ended and been waited for, under "reaped", the tree's total carried over
(nothing lost, nothing counted twice)."""

from __future__ import annotations

import subprocess
import sys

from .cputime import KINDS, tree_cpu

SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\nprint('done', flush=True)\ninput()"


def test_a_child_counts_while_it_runs_and_once_reaped_the_total_is_kept() -> None:
    before = tree_cpu()
    child = subprocess.Popen(
        [sys.executable, "-c", SPIN.format(s=0.4)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "done"  # it has spent 0.4 CPU-s
        running = tree_cpu()
        assert running["python"] - before["python"] >= 0.39  # psutil counts clock ticks (10 ms)
    finally:
        child.communicate("\n", timeout=30)
    after = tree_cpu()
    assert after["reaped"] - before["reaped"] >= 0.4  # moved to the waited-for children's count
    assert after["python"] - before["python"] < 0.2  # and no longer among the live ones
    total = sum(after[k] for k in KINDS) - sum(running[k] for k in KINDS)
    assert -0.05 < total < 0.5  # carried over, not lost and not doubled (the exit's own CPU: a little)
