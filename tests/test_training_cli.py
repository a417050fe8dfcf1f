"""`python -m attnviz train` (attnviz/training/cli.py, main(argv)): the JSON it writes, and one
line on stderr with exit status 2 for anything wrong, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attnviz.training.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _local(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_TRAIN_MAX_STEPS"):
        monkeypatch.delenv(key, raising=False)


def test_json_holds_every_snapshot_with_scores_and_maps(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    assert (
        main(["--task", "induction", "--steps", "20", "--seed", "3", "--snapshot-every", "10", "--json", str(out)]) == 0
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["task"] == "induction" and [s["step"] for s in data["snapshots"]] == [0, 10, 20]
    n = len(data["probe"]["tokens"])
    last = data["snapshots"][-1]
    weights = np.array(last["weights"])
    assert weights.shape == (2, 2, n, n)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-4)
    assert set(last["scores"]) == {"induction", "previous"} and np.array(last["scores"]["induction"]).shape == (2, 2)
    assert data["summary"]["step"] == 20 and data["summary"]["config"]["seed"] == 3


def test_the_same_seed_writes_the_same_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--task", "copy", "--steps", "10", "--json", "-"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    second = json.loads(capsys.readouterr().out)
    first["summary"].pop("seconds"), second["summary"].pop("seconds")
    assert first == second


def test_text_task_reads_a_file_in_any_language(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "poem.txt"
    source.write_text("床前明月光，疑是地上霜。举头望明月，低头思故乡。" * 2, encoding="utf-8")
    assert main(["--task", "text", "--text-file", str(source), "--steps", "10", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["probe"]["tokens"][:4] == ["<s>", "床", "前", "明"]


def test_without_json_it_prints_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--task", "reverse", "--steps", "10"]) == 0
    out = capsys.readouterr().out
    assert "reverse: 2 layers x 2 heads" in out and "diagonal score, best head per layer" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--task", "sort"], "invalid choice"),
        (["--task", "copy", "--steps", "0"], "steps must be a whole number from 1"),
        (["--task", "copy", "--heads", "3"], "must be a multiple of heads"),
        (["--task", "text"], "needs exactly one of --text and --text-file"),
        (["--task", "text", "--text", "too short"], "too short to learn from"),
        (["--task", "copy", "--text", "abc"], "are for --task text"),
        (["--task", "text", "--text-file", "/no/such/file"], "No such file"),
        (["--task", "copy", "--steps", "50000"], "steps is 50,000; the limit here is 20,000"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_a_demo_deployment_refuses_a_large_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ATTNVIZ_DEMO", "1")
    assert main(["--task", "copy", "--d-model", "128", "--steps", "10"]) == 2
    assert "d_model is 128; the limit here is 64" in capsys.readouterr().err


def test_as_a_process_no_traceback_reaches_the_terminal() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "attnviz.training.cli", "--task", "induction", "--layers", "99"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == "attnviz train: error: layers is 99; the limit here is 4"
