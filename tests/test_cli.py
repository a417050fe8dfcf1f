"""python -m attnviz: the command-line contract of ARCHITECTURE.md.

The command runs in this process through `main(argv)` (stdout, stderr and standard input
captured, SystemExit turned into its status), so a test pays neither a new interpreter nor
torch's import. What only a real process shows is held by the subprocess tests at the end: the
command started as `python -m attnviz`, its bytes on a real stdout, and a closed pipe."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from attnviz.__main__ import main

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


Run = Callable[..., Ran]


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], load_once: Callable[..., object]) -> Run:
    """`run(*args, stdin=None)`: the command in this process, as the shell would see it. The
    environment holds none of the deployment's ATTNVIZ_* settings (as a fresh shell would not).
    A model the command loads by name is loaded once for the test run (conftest `load_once`:
    the same arguments reach load_model; loading itself is tested in tests/test_models.py)."""
    for key in [k for k in os.environ if k.startswith("ATTNVIZ_")]:
        monkeypatch.delenv(key)
    monkeypatch.setattr("attnviz.__main__.load_model", load_once)

    def ran(*args: str, stdin: str | None = None) -> Ran:
        monkeypatch.setattr(sys, "stdin", io.StringIO("" if stdin is None else stdin))
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's own errors exit from inside parse_args
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return ran


def test_json_to_stdout_has_the_contract_shape(minilm: object, run: Run) -> None:
    out = run("The animal didn't cross the street because it was tired.", "--json", "-")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"text", "model", "device", "tokens", "truncated", "precision", "weights"}
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


def test_layer_and_head_select_what_json_writes(minilm: object, tmp_path: Path, run: Run) -> None:
    text = "The animal didn't cross the street because it was tired."
    expected = minilm.attend(text).weights  # type: ignore[attr-defined]
    out = run(text, "--layer", "2", "--json", "-")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"text", "model", "device", "tokens", "truncated", "layer", "precision", "weights"}
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


def test_scratch_switches_on_the_command_line(run: Run) -> None:
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
        (("bad \udcff bytes",), "not valid UTF-8"),  # what Python makes of a non-UTF-8 argv byte
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_traceback(run: Run, args: tuple[str, ...], message: str) -> None:
    out = run(*args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert message in lines[0] and lines[0].startswith("attnviz: error:")
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_three_thousand_words_are_truncated_and_flagged(run: Run) -> None:
    # one head's 512 x 512 map: the flag and the tokens are what is tested, not 19 million numbers
    out = run("-", "--layer", "0", "--head", "0", "--json", "-", stdin="word " * 3000)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["truncated"] is True and len(data["tokens"]) == 512
    assert np.array(data["weights"]).shape == (512, 512)
    assert "truncated to 512 of 3002 tokens" in out.stderr


def test_one_megabyte_is_refused_before_tokenising(run: Run) -> None:
    out = run("-", stdin="a" * 1_000_000)
    assert out.returncode == 2 and "limit" in out.stderr


def test_summary_and_html(tmp_path: Path, run: Run) -> None:
    html = tmp_path / "view.html"
    out = run("I sat by the river bank.", "--html", str(html))
    assert out.returncode == 0, out.stderr
    text = html.read_text()
    assert "plotly" in text.lower() and len(text) > 100_000  # plotly.js is inlined: works offline
    out = run("I sat by the river bank.")
    assert out.returncode == 0 and "6 layers x 12 heads" in out.stdout and "bank" in out.stdout


@pytest.mark.parametrize(
    ("text", "code", "needle"),
    [
        ("\u200b", 2, "no tokens"),
        ("<script>alert(1)</script>", 0, "script"),
        ("我爱北京 🤖", 0, "[CLS]"),
    ],
)
def test_command_line_handles_odd_text(run: Run, text: str, code: int, needle: str) -> None:
    out = run(text)
    assert out.returncode == code, out.stderr
    assert needle in (out.stdout + out.stderr) and "Traceback" not in out.stderr


def test_a_note_on_the_result_reaches_stderr(monkeypatch: pytest.MonkeyPatch, run: Run) -> None:
    """The runner's one out-of-memory fallback notes it on the result; the command line says so."""
    from dataclasses import replace

    import attnviz
    from attnviz.models.base import OOM_NOTE

    original = attnviz.PretrainedModel.attend

    def noted(self: attnviz.PretrainedModel, text: str, max_tokens: int | None = None) -> attnviz.Attention:
        return replace(original(self, text, max_tokens), notes=(OOM_NOTE.format(device="cuda"),))

    monkeypatch.setattr(attnviz.PretrainedModel, "attend", noted)
    out = run("dog bites man", "--model", "minilm")
    assert out.returncode == 0
    assert out.stderr.strip().splitlines() == [
        "attnviz: note: cuda ran out of memory: this result was computed on the CPU."
    ]


# ---------------------------------------------------------------- as a process (the smoke tests)


def test_as_a_process_it_writes_json_bytes_to_stdout() -> None:
    """`python -m attnviz` started for real, in a bare environment: a non-ASCII text, the JSON
    written as bytes on the real stdout, exit 0, nothing on stderr."""
    out = subprocess.run(
        [sys.executable, "-m", "attnviz", "我爱北京 🤖", "--json", "-"],
        cwd=ROOT,
        capture_output=True,
        timeout=180,
        env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "HOME": str(ROOT)},
    )
    assert (out.returncode, out.stderr) == (0, b"")
    data = json.loads(out.stdout.decode("utf-8"))
    assert data["tokens"][0] == "[CLS]" and np.array(data["weights"]).shape[:2] == (6, 12)


@pytest.mark.slow  # three new interpreters; the one above keeps a process in the fast lane
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
    reads nothing and exits long before the model is loaded, so every write meets a closed pipe.
    A closed pipe exists only between processes: these stay subprocesses (one per command)."""
    command = " ".join([sys.executable, "-m", "attnviz", *(f"'{a}'" for a in args)]) + " | true"
    out = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command}"], capture_output=True, text=True, timeout=300, cwd=Path.cwd()
    )
    assert (out.returncode, out.stderr) == (0, "")
