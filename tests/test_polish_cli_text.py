"""Every command's --json says what text it read (issue 23.6): `attnviz TEXT --json`, `attnviz
evidence --json` and `attnviz train --json` carry a "text" key (an addition to the contract's
keys, never a rename), hostile text included, and the documents stay valid JSON."""

from __future__ import annotations

import json

import pytest

from attnviz import PretrainedModel
from attnviz.__main__ import main as analyse_main
from attnviz.__main__ import to_json
from attnviz._cli import with_text
from attnviz.explain.cli import main as evidence_main
from attnviz.training.cli import main as train_main

HOSTILE = 'The "animal" </script><script>alert(1)</script> didn\'t cross 动物\\ 😀.'
CONTRACT = {"model", "device", "tokens", "truncated", "weights"}


def _json(capsys: pytest.CaptureFixture[str], code: int) -> dict[str, object]:
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, object] = json.loads(out)
    return data


def test_with_text_puts_the_text_last_and_keeps_every_key_in_place() -> None:
    doc = with_text(b'{"model": "m", "weights": [[1]]}\n', 'a "b" 动物')
    assert json.loads(doc) == {"text": 'a "b" 动物', "model": "m", "weights": [[1]]}
    assert list(json.loads(doc)) == ["model", "weights", "text"]  # the README reads '{"model": ...' first
    assert doc.startswith(b'{"model": "m"') and doc.endswith(b"}\n")
    assert json.loads(with_text(b"{}", "x")) == {"text": "x"}
    assert json.loads(with_text(b"{}", "lone \udc80")) == {"text": "lone \udc80"}  # escaped, not an error
    with pytest.raises(ValueError, match="one JSON object"):
        with_text(b"[1, 2]", "x")


def test_analyse_json_carries_the_text(minilm: PretrainedModel, capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, analyse_main([HOSTILE, "--layer", "0", "--head", "1", "--json", "-"]))
    assert data["text"] == HOSTILE and set(data) >= CONTRACT
    assert to_json(minilm.attend(HOSTILE))["text"] == HOSTILE  # the API's dict says the same


def test_evidence_json_carries_the_text(minilm: PretrainedModel, capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, evidence_main([HOSTILE, "--sinks", "--json", "-"]))
    assert data["text"] == HOSTILE and len(data) > 1  # the sinks result, with the text added
    plain = evidence_main([HOSTILE, "--sinks"])  # without --json the printout is unchanged: no text key
    out, _ = capsys.readouterr()
    assert plain == 0 and '"text"' not in out


def test_train_json_carries_the_text(capsys: pytest.CaptureFixture[str]) -> None:
    text = "Der Hund läuft über die Straße, weil er müde ist. 小狗过马路。"
    data = _json(capsys, train_main(["--task", "text", "--text", text, "--steps", "10", "--json", "-"]))
    assert data["text"] == text and data["task"] == "text"
    data = _json(capsys, train_main(["--task", "copy", "--steps", "10", "--json", "-"]))
    assert data["text"] == data["probe"]["text"]  # type: ignore[index]  # a symbol task: what its maps read
