"""bench/bench_class.py at a class of 3 (two real browser tabs, one student simulated through the
store) as a smoke test: it prints its table, every answer the students gave is in the database
and reached the teacher's dashboard, and the file it writes is the table it printed. No timing is
asserted (the figures are in bench/results_class.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .benchrun import run_bench
from .browser import chromium_path

pytestmark = [pytest.mark.slow, pytest.mark.browser]
ASYNC_PLAYWRIGHT = True  # tests/conftest.py closes the shared sync Chromium before this module


def test_a_small_class_reaches_the_dashboard(tmp_path: Path) -> None:
    chromium_path()  # skip (or fail in CI) before starting a server when there is no browser
    out = tmp_path / "class.md"
    printed = run_bench("bench_class.py", "--students", "3", "--real", "2", "--spread", "4", "--out", str(out))
    head = re.search(
        r"^3 students \((\d+) real browser tabs, (\d+) simulated.*?(\d+) answers in .*?(\d+) failures", printed, re.M
    )
    assert head is not None, printed
    assert head.groups() == ("2", "1", "6", "0")  # each student answered step 1 wrong, then right
    delays = re.search(r"^\| answer committed -> dashboard shows it \(s\) \|.*\| (\d+) \|$", printed, re.M)
    assert delays is not None and delays.group(1) == "6", printed  # every answer's delay was measured
    saved = re.search(r'^\| real tab: Enter -> "saved" \(s\) \|.*\| (\d+) \|$', printed, re.M)
    assert saved is not None and saved.group(1) == "4", printed  # the two real tabs' answers
    assert "| dashboard's last Answers reading / answers in the database | 6 / 6 |" in printed
    assert out.read_text(encoding="utf-8").strip() in printed
