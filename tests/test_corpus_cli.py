"""`attnviz corpus INPUT --out DIR` (attnviz/corpus/cli.py): exit 0 with a summary and progress on
stderr; exit 2 with one line and no traceback for every kind of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnviz.corpus.cli import main

LINES = ["The animal didn't cross the street because it was tired.", "", "dog bites man", "春天山上有花。"]


@pytest.fixture
def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "in.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def _one_line_error(capsys: pytest.CaptureFixture[str], code: int, needle: str) -> None:
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("attnviz corpus: error: ") and err.count("\n") == 1, err
    assert needle in err and "Traceback" not in err


def test_a_run_writes_the_outputs_and_says_so(
    text_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = main([str(text_file), "--out", str(out), "--device", "cpu", "--max-tokens", "32"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert sorted(p.name for p in out.iterdir()) == ["heads.parquet", "report.json", "sentences.parquet"]
    report = json.loads((out / "report.json").read_text())
    assert (report["lines_read"], report["analysed"], report["skips"]) == (4, 3, [{"id": 2, "reason": "empty"}])
    assert report["settings"]["max_tokens"] == 32
    assert "4 lines read, 3 sentences analysed" in captured.out and "skipped 1 (1 empty" in captured.out
    assert "sentences/s" in captured.err  # the last progress line (stderr is not a terminal here)
    # the same command again: the finished run is read back, nothing recomputed
    assert main([str(text_file), "--out", str(out), "--device", "cpu", "--max-tokens", "32", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["missing.txt"], "is not a file"),
        (["in.docx"], "use a .txt"),
        (["in.txt", "--model", "<script>"], "model name may hold"),
        (["in.txt", "--max-tokens", "1"], "max_tokens must be at least 2"),
        (["in.txt", "--engine", "spark"], "invalid choice"),
        (["in.txt", "--device", "cuda:7"], "cuda"),
    ],
)
def test_bad_arguments_are_one_line(
    tmp_path: Path, text_file: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    (tmp_path / "in.docx").write_text("x")
    args = [str(tmp_path / args[0]), *args[1:]]
    try:
        code = main([*args, "--out", str(tmp_path / "out")])
    except SystemExit as exc:  # argparse's own refusals
        code = int(exc.code or 0)
    _one_line_error(capsys, code, needle)


def test_a_folder_holding_another_run_is_refused(
    text_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main([str(text_file), "--out", str(out), "--device", "cpu", "--max-tokens", "32", "--quiet"]) == 0
    capsys.readouterr()
    _one_line_error(capsys, main([str(text_file), "--out", str(out), "--max-tokens", "64"]), "other settings")


def test_a_csv_without_a_text_column_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.csv"
    path.write_text("sentence\nhello\n")
    _one_line_error(capsys, main([str(path), "--out", str(tmp_path / "out"), "--device", "cpu"]), "'text' column")
