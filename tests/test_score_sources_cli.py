"""`python -m attnviz evidence TEXT --why LAYER,HEAD,I,J`: the JSON is explain.score_sources'
numbers (its matrix sums to the score), the printout lists the top parts of each side with
their share, and bad input exits 2 with one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz import explain
from attnviz.__main__ import main

from .tiny_llama import build_llama

TEXT = "The animal didn't cross the street because it was tired."


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["evidence", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_why_as_json_is_score_sources(
    minilm: attnviz.PretrainedModel, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("attnviz.explain.cli.load_model", lambda name, device="auto": minilm)
    code, out, err = _run(capsys, TEXT, "--why", "4,7,3,9", "--json", "-")
    assert code == 0, err
    data = json.loads(out)
    s = explain.score_sources(minilm, TEXT, 4, 7, 3, 9)
    assert (data["layer"], data["head"], data["query"], data["key"]) == (4, 7, 3, 9) and data["text"] == TEXT
    assert data["query_parts"] == s.query_parts and data["score"] == pytest.approx(s.model_score, abs=1e-4)
    np.testing.assert_allclose(data["matrix"], s.matrix, atol=1e-6)
    assert np.sum(data["matrix"]) == pytest.approx(data["score"], abs=1e-4)
    assert [r["part"] for r in data["key_side"]] == [name for name, _, _ in s.top("key", 5)]
    for r in data["query_side"]:
        assert r["share"] == pytest.approx(r["value"] / data["score"], abs=1e-4)


def test_why_prints_the_top_parts_of_a_decoder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = build_llama(tmp_path / "llama", layers=3)  # loaded by its folder, as a visitor would
    code, out, err = _run(capsys, TEXT, "--model", str(folder), "--why", "2,3,9,4")
    assert code == 0, err
    assert "layer 2, head 3 (key/value head 1)" in out and "query side" in out and "key side" in out
    s = explain.score_sources(attnviz.load_model(str(folder), device="cpu"), TEXT, 2, 3, 9, 4)
    for side, lines in (("query", out.split("query side")[1]), ("key", out.split("key side")[1])):
        first = lines.splitlines()[1]  # the part that moves the score most, its value and its share
        name, value, share = s.top(side, 1)[0]
        assert first.split() == [*name.split(), f"{value:.4f}", f"{share:.0%}".replace("-0%", "0%")]
    assert "through earlier heads" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--why", "1,2,3"), "four whole numbers"),
        (("--why", "1,2,3,-4"), "four whole numbers"),
        (("--why", "0,0,2,99"), "key token 99 out of range"),
        (("--why", "9,0,2,1"), "layer 9"),
        (("--why", "0,0,2,1", "--sinks"), "choose one of"),
    ],
)
def test_why_errors_are_one_line_and_exit_2(
    minilm: attnviz.PretrainedModel,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
    message: str,
) -> None:
    monkeypatch.setattr("attnviz.explain.cli.load_model", lambda name, device="auto": minilm)
    code, _, err = _run(capsys, TEXT, *argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.slow  # a benchmark's smoke run, as tests/test_bench.py runs the others
def test_the_benchmark_prints_its_rows(tmp_path: Path) -> None:
    from .benchrun import run_bench

    folder = build_llama(tmp_path / "llama", layers=3)
    table = run_bench("bench_why.py", "--model", str(folder), "--tokens", "8,16", "--repeat", "1")
    # embed, then 4 heads and the MLP in each of layers 0 and 1; no bias part (the biases are 0)
    assert "| score_sources, 16 tokens, layer 2 (11 parts a side) (s) |" in table, table
    assert "| composition, 12 heads, every earlier pair (s) |" in table
