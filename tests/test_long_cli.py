"""`python -m attnviz long FILE --model M --out DIR` in process: every head's overview and
received weights written, equal to `attend_long`'s, with progress on stderr; bad input is one
line and status 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.__main__ import main
from attnviz.long import attend_long

from .test_long import build_llama, long_text


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_llama(tmp_path_factory.mktemp("tiny-llama-cli"))


def test_long_writes_every_head(llama_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = long_text(100)
    (tmp_path / "in.txt").write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    args = ["long", str(tmp_path / "in.txt"), "--model", str(llama_folder), "--out", str(out), "--size", "64"]
    assert main([*args, "--max-tokens", "700"]) == 0
    err = capsys.readouterr().err
    assert "forward: layer 2/2" in err and "heads: 8/8" in err and "wrote" in err
    saved = np.load(out / "long.npz")
    doc = json.loads((out / "long.json").read_text(encoding="utf-8"))
    assert (doc["n"], doc["layers"], doc["heads"], doc["causal"]) == (700, 2, 4, True)
    assert doc["kv_heads"] == [0, 0, 1, 1] and len(doc["tokens"]) == 700
    assert saved["overview"].shape == (2, 4, 64, 64) and saved["received"].shape == (2, 4, 700)
    model = attnviz.load_model(str(llama_folder), "cpu", max_tokens=1024)
    long = attend_long(model, text, max_tokens=700)
    np.testing.assert_allclose(saved["overview"][1, 2], long.overview(1, 2, 64), atol=1e-7)
    np.testing.assert_allclose(saved["received"][0, 3], long.received(0, 3), atol=1e-6)
    np.testing.assert_allclose(saved["received"].sum(-1), 700, rtol=1e-5)  # every row gives out 1
    assert doc["most_received"][0][3][0] == int(long.received(0, 3).argmax())


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--size", "0"], "--size must be at least 1"), ([], "No such file")],
)
def test_bad_input_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    missing = tmp_path / "missing.txt"
    if extra:
        missing.write_text("some text", encoding="utf-8")
    assert main(["long", str(missing), "--model", "scratch", "--out", str(tmp_path / "o"), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnviz long: error:") and message in err and err.count("\n") == 1


def test_a_file_that_is_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe caf\xe9")
    assert main(["long", str(tmp_path / "bad.txt"), "--model", "scratch", "--out", str(tmp_path / "o")]) == 2
    assert "is not UTF-8 text" in capsys.readouterr().err
