"""scripts/cpuwatch.py: a command's CPU by kind of process, read from /proc. A child that burns
a known amount of CPU under a server's command line is counted as an app server, to within a
reading's interval; what this test process had spent before the watch is not counted; the sum
of the kinds never exceeds the machine's busy CPU-s; the command's exit status is the script's
and the figures go to JSON."""

from __future__ import annotations

import json
import os
import resource
import subprocess
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
        (  # the forkserver that forks the training children, and each child (a fork keeps the command line)
            ".venv/bin/python -B -c from multiprocessing.forkserver import main; "
            "main(5, 7, ['attnviz.training.child', 'torch._dynamo'], **{'sys_path': ['/app']})",
            "training child",
        ),
        (".venv/bin/python -m attnviz evidence dog bites man", "command line"),
        ("/bin/sh -c true", "other"),
    ],
)
def test_each_process_is_named_by_its_command_line(cmdline: str, kind: str) -> None:
    assert cpuwatch.kind(cmdline) == kind


def test_a_childs_cpu_is_counted_under_its_kind_and_nothing_from_before() -> None:
    """Per process (other test workers may be busy beside this one, so not per kind)."""
    exec(BURN.format(s=0.5))  # this process spends CPU before the watch, which must not count
    assert resource.getrusage(resource.RUSAGE_SELF).ru_utime > 0.5
    watch = cpuwatch.Watch(0.1)
    watch.thread.start()
    # The child's argv after `-c` shows in its command line: it looks like an app server.
    child = subprocess.Popen([sys.executable, "-c", BURN.format(s=0.8), "streamlit", "run", "app.py"])
    child.wait()
    watch.done.set()
    watch.thread.join()
    (me,) = [key for key in watch.last if key[0] == os.getpid()]
    (it,) = [key for key in watch.last if key[0] == child.pid]
    assert watch.names[it] == "app server"
    assert 0.6 <= watch.last[it] - watch.first.get(it, 0.0) <= 0.8 + 0.2  # its burn and start
    assert watch.last[me] - watch.first[me] < 0.3  # the watch thread's readings only


def test_the_command_runs_and_its_figures_go_to_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cpu.json"
    command = [sys.executable, "-c", BURN.format(s=0.3) + "\nraise SystemExit(3)"]
    assert cpuwatch.main(["--interval", "0.05", "--json", str(out), "--", *command]) == 3  # its exit status
    figures = json.loads(out.read_text())
    assert figures["exit"] == 3 and figures["command"] == command
    assert figures["kinds"]["python, other"]["cpu_s"] >= 0.2
    assert sum(row["cpu_s"] for row in figures["kinds"].values()) <= figures["busy_cpu_s"] + 0.05
    assert "| python, other |" in capsys.readouterr().err


def test_no_command_is_refused_and_a_missing_one_is_said_in_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cpuwatch.main([])
    assert exc.value.code == 2
    assert cpuwatch.main(["--", "no-such-program-xyz", "arg"]) == 127
    err = capsys.readouterr().err
    assert "cpuwatch: cannot run 'no-such-program-xyz': No such file or directory" in err
    assert "Traceback" not in err


def test_top_lists_the_costliest_processes_with_their_command_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """Other test workers may spend as much meanwhile: the burner is among the first five, and the
    rows go from the most CPU-s down."""
    marker = "cpuwatch-top-marker"
    command = [sys.executable, "-c", BURN.format(s=0.4), marker]
    assert cpuwatch.main(["--interval", "0.05", "--top", "5", "--", *command]) == 0
    err = capsys.readouterr().err
    table = err.split("the 5 costliest processes", 1)[1].splitlines()
    rows = [line.split(" | ") for line in table if line.startswith("| ") and not line.startswith("| CPU-s")]
    assert len(rows) == 5
    spent = [float(row[0].lstrip("| ")) for row in rows]
    assert spent == sorted(spent, reverse=True)
    (burner,) = [row for row in rows if marker in row[2]]
    assert float(burner[0].lstrip("| ")) >= 0.3 and burner[1] == "python, other"
