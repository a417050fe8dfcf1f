"""python -m attnviz: the command-line contract of ARCHITECTURE.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "attnviz", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
        env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "HOME": str(ROOT)},
    )


def test_json_to_stdout_has_the_contract_shape(minilm: object) -> None:
    out = run("The animal didn't cross the street because it was tired.", "--json", "-")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"model", "device", "tokens", "truncated", "precision", "weights"}
    assert data["model"] == "minilm" and data["device"] == "cpu" and data["truncated"] is False
    assert data["precision"] == "6 significant digits"
    w = np.array(data["weights"])
    n = len(data["tokens"])
    assert w.shape == (6, 12, n, n)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-4)
    expected = minilm.attend("The animal didn't cross the street because it was tired.")  # type: ignore[attr-defined]
    np.testing.assert_allclose(w, expected.weights, rtol=5e-6, atol=1e-5)
    # at most 6 significant digits a number: about 9 bytes each, not 17-digit doubles
    assert len(out.stdout) < 12 * w.size


def test_layer_and_head_select_what_json_writes(minilm: object, tmp_path: Path) -> None:
    text = "The animal didn't cross the street because it was tired."
    expected = minilm.attend(text).weights  # type: ignore[attr-defined]
    out = run(text, "--layer", "2", "--json", "-")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"model", "device", "tokens", "truncated", "layer", "precision", "weights"}
    assert data["layer"] == 2
    np.testing.assert_allclose(np.array(data["weights"]), expected[2], rtol=5e-6, atol=1e-6)
    path = tmp_path / "head.json"
    out = run(text, "--layer", "2", "--head", "5", "--json", str(path))
    assert out.returncode == 0 and out.stdout == "", out.stderr
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["layer"], data["head"]) == (2, 5) and data["tokens"][0] == "[CLS]"
    np.testing.assert_allclose(np.array(data["weights"]), expected[2, 5], rtol=5e-6, atol=1e-6)
    out = run(text, "--layer", "5", "--head", "0")  # the summary follows the selection too
    assert out.returncode == 0 and "layer 5, head 0:" in out.stdout


def test_scratch_switches_on_the_command_line() -> None:
    out = run("dog bites man", "--model", "scratch", "--causal", "--no-scale", "--json", "-")
    assert out.returncode == 0, out.stderr
    w = np.array(json.loads(out.stdout)["weights"])
    assert np.all(np.triu(w, 1) == 0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("",), "empty"),
        (("   ",), "empty"),
        (("hello", "--model", "no/such-model-anywhere"), "no/such-model-anywhere"),
        (("hello", "--model", "./missing-dir"), "does not exist"),
        (("hello", "--device", "cuda"), "CUDA"),
        (("hello", "--causal"), "--model scratch"),
        (("hello", "--max-tokens", "1"), "at least 2"),
        (("hello", "--bogus-flag"), "unrecognized"),
        (("hello", "--head", "3", "--json", "-"), "--head needs --layer"),
        (("hello", "--layer", "6", "--json", "-"), "layers 0..5"),
        (("hello", "--layer", "-1"), "layers 0..5"),
        (("hello", "--layer", "0", "--head", "12", "--json", "-"), "heads 0..11"),
        (("hello", "--layer", "two"), "invalid int value"),
        (("bad \udcff bytes",), "not valid UTF-8"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_traceback(args: tuple[str, ...], message: str) -> None:
    out = run(*args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert message in lines[0] and lines[0].startswith("attnviz: error:")
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_three_thousand_words_are_truncated_and_flagged() -> None:
    out = run("-", "--json", "-", stdin="word " * 3000)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["truncated"] is True and len(data["tokens"]) == 512
    assert "truncated to 512 of 3002 tokens" in out.stderr


def test_one_megabyte_is_refused_before_tokenising() -> None:
    out = run("-", stdin="a" * 1_000_000)
    assert out.returncode == 2 and "limit" in out.stderr


def test_summary_and_html(tmp_path: Path) -> None:
    html = tmp_path / "view.html"
    out = run("I sat by the river bank.", "--html", str(html))
    assert out.returncode == 0, out.stderr
    text = html.read_text()
    assert "plotly" in text.lower() and len(text) > 100_000  # plotly.js is inlined: works offline
    out = run("I sat by the river bank.")
    assert out.returncode == 0 and "6 layers x 12 heads" in out.stdout and "bank" in out.stdout


def test_a_note_on_the_result_reaches_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The runner's one out-of-memory fallback notes it on the result; the command line says so."""
    from dataclasses import replace

    import attnviz
    from attnviz.__main__ import main
    from attnviz.models.base import OOM_NOTE

    original = attnviz.PretrainedModel.attend

    def noted(self: attnviz.PretrainedModel, text: str, max_tokens: int | None = None) -> attnviz.Attention:
        return replace(original(self, text, max_tokens), notes=(OOM_NOTE.format(device="cuda"),))

    monkeypatch.setattr(attnviz.PretrainedModel, "attend", noted)
    assert main(["dog bites man", "--model", "minilm"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["attnviz: note: cuda ran out of memory: this result was computed on the CPU."]


@pytest.mark.parametrize(
    "args",
    [
        ["dog bites man", "--json", "-"],
        ["evidence", "dog bites man", "--sinks"],  # many short prints
        ["train", "--task", "copy", "--steps", "30"],
    ],
)
def test_a_reader_that_stops_early_ends_the_command_quietly(args: list[str]) -> None:
    """`attnviz ... | head -1`: the pipe closes under the command; like any Unix tool it stops
    with status 0 and nothing on stderr (no 'Broken pipe' error line, no traceback). `true`
    reads nothing and exits long before the model is loaded, so every write meets a closed pipe."""
    command = " ".join([sys.executable, "-m", "attnviz", *(f"'{a}'" for a in args)]) + " | true"
    out = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command}"], capture_output=True, text=True, timeout=300, cwd=Path.cwd()
    )
    assert (out.returncode, out.stderr) == (0, "")
