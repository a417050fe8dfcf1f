"""scripts/cpuwatch.py: a command's CPU by kind of process, read from /proc. A child that burns
a known amount of CPU under a server's command line is counted as an app server, to within a
reading's interval; what this test process had spent before the command is not counted; the
sum of the kinds never exceeds the machine's busy CPU-s; and the figures go to JSON."""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path

import pytest

from scripts import cpuwatch

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass"


@pytest.mark.parametrize(
    ("cmdline", "kind"),
    [
        ("/usr/lib/chromium/chromium-headless-shell --type=renderer --headless=old", "chromium renderer"),
        ("/usr/lib/chromium/chromium-headless-shell --type=gpu-process --no-sandbox", "chromium gpu"),
        ("/usr/lib/chromium/chromium-headless-shell --disable-gpu --remote-debugging-pipe", "chromium other"),
        (".venv/bin/python -m streamlit run app.py --server.headless=true", "app server"),
        (".venv/bin/python -u -c import sys;exec(eval(sys.stdin.readline()))", "pytest"),
        (".venv/bin/python -m attnviz.training.child --zygote 3", "training child"),
        (".venv/bin/python -m attnviz evidence dog bites man", "command line"),
        ("/bin/sh -c true", "other"),
    ],
)
def test_each_process_is_named_by_its_command_line(cmdline: str, kind: str) -> None:
    assert cpuwatch.kind(cmdline) == kind


def test_a_childs_cpu_is_counted_under_its_kind_and_nothing_from_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exec(BURN.format(s=0.5))  # this process spends CPU before the command, which must not count
    assert resource.getrusage(resource.RUSAGE_SELF).ru_utime > 0.5
    out = tmp_path / "cpu.json"
    # The child's argv after `-c` shows in its command line: it looks like an app server.
    command = [sys.executable, "-c", BURN.format(s=0.8), "streamlit", "run", "app.py"]
    assert cpuwatch.main(["--interval", "0.05", "--json", str(out), "--", *command]) == 0
    figures = json.loads(out.read_text())
    kinds = {name: row["cpu_s"] for name, row in figures["kinds"].items()}
    assert 0.6 <= kinds["app server"] <= 0.8 + 0.2  # its burn and start, less what fell before a reading
    assert kinds.get("pytest", 0.0) < 0.3  # this process: its watch thread only
    assert sum(kinds.values()) <= figures["busy_cpu_s"] + 0.05
    assert figures["exit"] == 0 and figures["command"] == command
    assert "| app server |" in capsys.readouterr().err


def test_no_command_is_refused() -> None:
    with pytest.raises(SystemExit) as exc:
        cpuwatch.main([])
    assert exc.value.code == 2
