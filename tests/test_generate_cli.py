"""`python -m attnviz generate`: the steps and rows it writes are `attnviz.generate`'s, and bad
input ends with status 2 and one line. Run in this process (as tests/test_cli.py runs the main
command), on a tiny grouped-query Llama built here and once on SmolLM2."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attnviz
from attnviz.__main__ import main

from .smollm2_model import smollm2
from .tiny_llama import build_llama

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "The animal didn't cross the street"


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_llama(tmp_path_factory.mktemp("gen-cli-llama"), init=0.3)


@pytest.fixture
def run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], load_once: Callable[..., Any]
) -> Callable[..., tuple[int, str, str]]:
    """`run(*args)` -> (status, stdout, stderr) of `python -m attnviz generate ...`; SmolLM2 is the
    test run's one copy, any other model loaded once (conftest `load_once`)."""
    for key in [k for k in os.environ if k.startswith("ATTNVIZ_")]:
        monkeypatch.delenv(key)

    def load(name: str, device: str = "auto", **options: Any) -> Any:
        return smollm2() if name == "smollm2" else load_once(name, device, **options)

    monkeypatch.setattr("attnviz.generation.cli.load_model", load)

    def ran(*args: str, stdin: str = "") -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        try:
            code = main(["generate", *args])
        except SystemExit as exc:  # argparse's own errors
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        return code, out, err

    return ran


def test_json_and_npz_hold_the_generations_steps_and_rows(
    run: Callable[..., tuple[int, str, str]], llama_dir: Path, tmp_path: Path
) -> None:
    out_json, out_npz = tmp_path / "gen.json", tmp_path / "rows.npz"
    args = [
        "--model",
        str(llama_dir),
        "--device",
        "cpu",
        "--steps",
        "6",
        "--json",
        str(out_json),
        "--npz",
        str(out_npz),
    ]
    code, out, err = run(PROMPT, *args)
    assert code == 0, err
    assert f"wrote {out_json}" in out and f"wrote {out_npz}" in out and "alternatives" in out
    gen = attnviz.generate(attnviz.load_model(str(llama_dir), device="cpu"), PROMPT, steps=6)
    doc = json.loads(out_json.read_text(encoding="utf-8"))
    assert list(doc)[-1] == "text" and doc["text"] == PROMPT and doc["tokens"] == gen.tokens
    assert doc["layers"] == 2 and doc["heads"] == 4 and doc["n_prompt"] == gen.n_prompt
    for mine, step in zip(doc["steps"], gen.steps, strict=True):
        assert (mine["token"], mine["token_id"], mine["position"]) == (step.token, step.token_id, step.position)
        assert mine["probability"] == pytest.approx(step.probability, abs=1e-7)
        assert [a[0] for a in mine["alternatives"]] == [a[0] for a in step.alternatives]
        assert (mine["cache_bytes"], mine["cache_bytes_ungrouped"]) == (step.cache_bytes, step.cache_bytes_ungrouped)
    with np.load(out_npz) as npz:
        rows, positions = npz["rows"], npz["positions"]
        assert rows.dtype == np.float32 and rows.shape == (6, 2, 4, gen.steps[-1].position + 1)
        assert list(npz["token_ids"]) == list(gen.ids) and int(npz["n_prompt"]) == gen.n_prompt
    for i, step in enumerate(gen.steps):
        assert positions[i] == step.position
        np.testing.assert_allclose(rows[i, :, :, : step.position + 1], step.rows, atol=1e-6)
        assert not rows[i, :, :, step.position + 1 :].any()


def test_sampling_flags_reach_generate_and_stdout_carries_the_json_alone(
    run: Callable[..., tuple[int, str, str]], llama_dir: Path
) -> None:
    flags = ["--steps", "8", "--temperature", "1.5", "--top-k", "5", "--seed", "11"]
    code, out, err = run(PROMPT, "--model", str(llama_dir), "--device", "cpu", *flags, "--json", "-")
    assert code == 0, err
    doc = json.loads(out)
    gen = attnviz.generate(
        attnviz.load_model(str(llama_dir), device="cpu"), PROMPT, 8, temperature=1.5, top_k=5, seed=11
    )
    assert [s["token_id"] for s in doc["steps"]] == [s.token_id for s in gen.steps]
    assert (doc["temperature"], doc["top_k"], doc["seed"]) == (1.5, 5, 11)


def test_smollm2_by_default_writes_paris_from_standard_input(run: Callable[..., tuple[int, str, str]]) -> None:
    code, out, err = run("-", "--steps", "2", "--device", "cpu", "--json", "-", stdin="The capital of France is")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["model"] == "smollm2" and doc["steps"][0]["token"] == " Paris" and doc["layers"] == 30
    assert doc["steps"][0]["cache_bytes_ungrouped"] == 3 * doc["steps"][0]["cache_bytes"]  # 9 query heads read 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["dog bites man", "--steps", "0"], "steps must be"),
        (["dog bites man", "--steps", "1000"], "steps must be"),
        (["dog bites man", "--temperature", "-1"], "temperature must be 0"),
        (["dog bites man", "--temperature", "nan"], "finite number"),
        (["dog bites man", "--top-k", "0"], "top_k must be"),
        (["dog bites man", "--seed", "-3"], "seed must be"),
        (["   "], "empty"),
        (["dog bites man", "--model", "minilm"], "not a causal decoder"),
        (["dog bites man", "--model", "/no/such/folder"], "does not exist"),
        (["dog bites man", "--steps", "ten"], "invalid int value"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    run: Callable[..., tuple[int, str, str]], args: list[str], message: str
) -> None:
    code, out, err = run(*args, "--device", "cpu")
    assert code == 2 and out == ""
    assert err.startswith("attnviz generate: error: ") and message in err and err.count("\n") == 1


def test_help_and_a_refused_argument_import_no_torch() -> None:
    probe = (
        "import contextlib, io, json, sys\n"
        "from attnviz.__main__ import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:\n"
        "    try:\n        main(['generate', '--help'])\n    except SystemExit:\n        pass\n"
        "    code = main(['generate', 'x', '--steps', '0'])\n"
        "print(json.dumps([code, 'usage:' in out.getvalue(), 'torch' in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [2, True, False]
