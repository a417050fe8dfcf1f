"""The value norms from the views' own forward pass (explain.attend_keeping_values, issue 24.1):
the same attention as `attend` and the same norms as the second forward of `value_norms` on the
text as the views cut it, for the quick MiniLM (no transformers load for it), the Hugging Face
runner and the scratch encoder; None where that pass cannot give them; and the explorer making
one pass where it made two."""

from __future__ import annotations

import importlib
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import explain
from attnviz.models import EMBEDDED_MODEL, load_model
from attnviz.models.huggingface import PretrainedModel
from attnviz.models.loading import _load_hf, embedded_model_dir
from attnviz.models.minilm_quick import QuickMiniLM

TEXT = "The animal didn't cross the street because it was tired."
LONG = " ".join(f"bank{i % 7} river money, tired {i}" for i in range(40))
APP = str(Path(__file__).with_name("app_entry.py"))


def _with_norms(
    model: attnviz.PretrainedModel | attnviz.ScratchModel, text: str, limit: int | None = None
) -> tuple[attnviz.Attention, np.ndarray | None]:
    """The pass's attention and its value norms made at once (None where the pass gives none)."""
    att, values = explain.attend_keeping_values(model, text, limit)
    return att, None if values is None else values.norms()


def _same(model: attnviz.PretrainedModel | attnviz.ScratchModel, text: str, limit: int | None) -> np.ndarray:
    att, norms = _with_norms(model, text, limit)
    plain = model.attend(text, limit)
    assert att.tokens == plain.tokens and att.truncated == plain.truncated
    np.testing.assert_array_equal(att.weights, plain.weights)  # the hooks change nothing
    assert norms is not None and norms.dtype == np.float32
    second = explain.value_norms(model, model.fit(text, limit))
    assert norms.shape == second.shape == att.weights.shape[:3]
    np.testing.assert_allclose(norms, second, rtol=1e-4, atol=1e-5)
    return norms


@pytest.mark.parametrize("limit", [None, 12])
@pytest.mark.parametrize("text", [TEXT, LONG], ids=["short", "long"])
def test_the_quick_minilm_gives_the_second_passes_norms_without_loading_transformers(
    text: str, limit: int | None
) -> None:
    quick = load_model(EMBEDDED_MODEL, "cpu")
    assert isinstance(quick, QuickMiniLM) and quick.quick is not None
    att, norms = _with_norms(quick, text, limit)
    assert quick.quick is not None and quick._full is None  # still the quick encoder: nothing loaded
    reference = _load_hf(str(embedded_model_dir()), torch.device("cpu"), 512, EMBEDDED_MODEL)
    np.testing.assert_allclose(att.weights, reference.attend(text, limit).weights, atol=1e-5, rtol=0)
    assert norms is not None
    second = explain.value_norms(reference, reference.fit(text, limit))
    np.testing.assert_allclose(norms, second, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("limit", [None, 12])
def test_the_quick_minilm_traces_and_gives_the_norm_based_weights_without_loading_transformers(
    limit: int | None,
) -> None:
    """`trace` and `norm_weights` (the caveats' norm-based sinks) through the quick encoder: the
    records and the weights of transformers' model within 1e-5, and no full load."""
    quick = load_model(EMBEDDED_MODEL, "cpu")
    assert isinstance(quick, QuickMiniLM)
    reference = _load_hf(str(embedded_model_dir()), torch.device("cpu"), 512, EMBEDDED_MODEL)
    fitted = quick.fit(LONG, limit)
    with torch.inference_mode():
        got_w, got = quick.trace(quick.encode(fitted).inputs)
        want_w, want = reference.trace(reference.encode(fitted).inputs)
    mine, theirs = explain.norm_weights(quick, fitted), explain.norm_weights(reference, fitted)
    assert quick.quick is not None and quick._full is None
    np.testing.assert_allclose(got_w, want_w, atol=1e-5, rtol=0)
    for g, w in zip(got, want, strict=True):
        assert sorted(g) == sorted(w) == ["attn_out", "values", "x"]
        for key in w:
            np.testing.assert_allclose(g[key].numpy(), w[key].numpy(), atol=1e-4, rtol=0, err_msg=key)
    for name in ("per_head", "value_norms", "head_cosines"):
        np.testing.assert_allclose(getattr(mine, name), getattr(theirs, name), atol=1e-4, rtol=1e-4, err_msg=name)
    assert mine.tokens == theirs.tokens


def test_the_sinks_command_takes_its_norms_from_the_attentions_pass() -> None:
    """`attnviz evidence TEXT --sinks` (evidence.sink_heads): the same heads, shares and value
    norm ratios as the norms of a second forward on transformers' model give, and the embedded
    MiniLM never loads that model for it (5.1 -> 2.1 s a command)."""
    from attnviz.explain.cli import sink_heads

    quick = load_model(EMBEDDED_MODEL, "cpu")
    assert isinstance(quick, QuickMiniLM)
    got = sink_heads(quick, TEXT, 512)
    assert quick.quick is not None and quick._full is None
    reference = _load_hf(str(embedded_model_dir()), torch.device("cpu"), 512, EMBEDDED_MODEL)
    att = reference.attend(TEXT, 512)
    want = explain.sink_scores(att, norms=explain.norm_weights(reference, reference.fit(TEXT, 512)))
    assert got["tokens"] == att.tokens and got["threshold"] == want.threshold
    assert sorted((h["layer"], h["head"], h["token"]) for h in got["heads"]) == sorted(
        (int(layer), int(head), att.tokens[int(k)]) for layer, head, k in zip(*want.sinks.nonzero(), strict=True)
    )
    for h in got["heads"]:
        k = att.tokens.index(h["token"])
        assert h["share"] == pytest.approx(float(want.received[h["layer"], h["head"], k]), abs=1e-4)
        assert h["value_norm_ratio"] == pytest.approx(float(want.value_ratio(k)[h["layer"], h["head"]]), rel=1e-4)


@pytest.mark.parametrize("limit", [None, 12])
def test_the_hugging_face_runner_and_the_scratch_encoder_give_the_same_norms(
    minilm: attnviz.PretrainedModel, scratch: attnviz.ScratchModel, limit: int | None
) -> None:
    reference = _load_hf(str(embedded_model_dir()), torch.device("cpu"), 512, EMBEDDED_MODEL)
    assert isinstance(reference, PretrainedModel) and not isinstance(reference, QuickMiniLM)
    _same(reference, LONG, limit)
    _same(scratch, TEXT, limit)


def test_layers_that_do_not_come_apart_give_the_attention_and_no_norms(
    scratch: attnviz.ScratchModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_layers() -> list[object]:
        raise ValueError("not a post-LayerNorm encoder")

    monkeypatch.setattr(scratch, "layers", no_layers)
    att, norms = _with_norms(scratch, TEXT)
    assert norms is None
    np.testing.assert_array_equal(att.weights, scratch.attend(TEXT).weights)


def test_a_pass_that_misses_the_hooked_layers_gives_no_norms(scratch: attnviz.ScratchModel) -> None:
    """The quick MiniLM's full model loaded between naming its layers and the pass: the pass runs
    through other modules, and what the hooks saw is not passed off as this text's norms."""
    other = load_model("scratch", "cpu")  # the same architecture, other module objects
    object.__setattr__(scratch, "attend_layers", other.layers)
    try:
        att, norms = _with_norms(scratch, TEXT)
    finally:
        object.__delattr__(scratch, "attend_layers")
    assert norms is None and att.n > 0


def test_another_threads_pass_meanwhile_writes_nothing(scratch: attnviz.ScratchModel) -> None:
    """Two visitors share the model's modules: a pass on another thread while the hooks are on
    leaves this text's norms as the second forward gives them."""
    other_text = "A completely different sentence, of another length than the first one."
    inside = threading.Event()
    original = scratch.attend

    def attend_while_another_runs(text: str, max_tokens: int | None = None) -> attnviz.Attention:
        if not inside.is_set():
            inside.set()
            worker = threading.Thread(target=original, args=(other_text,))
            worker.start()
            worker.join()
        return original(text, max_tokens)

    object.__setattr__(scratch, "attend", attend_while_another_runs)
    try:
        _, norms = _with_norms(scratch, TEXT)
    finally:
        object.__delattr__(scratch, "attend")
    assert inside.is_set() and norms is not None
    np.testing.assert_allclose(norms, explain.value_norms(scratch, TEXT), rtol=1e-4, atol=1e-5)


def test_the_explorer_makes_one_pass_and_still_shows_the_moved_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hide-sinks switch under the views read the value norms of the views' pass: no second
    forward (`value_norms` never runs) and its caveat still gives how little the sink moves."""
    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_MAX_CHARS", "ATTNVIZ_MAX_TOKENS", "ATTNVIZ_LANG"):
        monkeypatch.delenv(key, raising=False)
    second: list[str] = []
    original = explain.value_norms

    def counting(model: attnviz.PretrainedModel, text: str) -> np.ndarray:
        second.append(text)
        return original(model, text)

    monkeypatch.setattr(explain, "value_norms", counting)
    text = "Sinks and norms: one pass, " + " ".join(f"word{i}" for i in range(30)) + "."
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["text"] = text
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert second == []
    captions = " ".join(str(c.value) for c in at.caption)
    assert "by norm-based weights that token supplies only" in captions, captions


def test_the_pass_keeps_the_values_and_makes_the_norms_only_when_asked(
    scratch: attnviz.ScratchModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing of the norms' work happens inside the views' pass (it would delay the first
    chart); the first `norms()` makes them, later ones return the same array, and the kept value
    vectors are let go."""
    module = importlib.import_module("attnviz.explain.value_norms")  # the package's `value_norms` is the function

    calls: list[int] = []
    original = module._transformed

    def counting(*args: object, **kwargs: object) -> torch.Tensor:
        calls.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "_transformed", counting)
    att, values = explain.attend_keeping_values(scratch, TEXT)
    assert values is not None and calls == []
    width = values.parts[0].n_heads * values.parts[0].head_dim
    assert len(values.values) == scratch.n_layers and values.values[0].shape == (att.n, width)
    first = values.norms()
    assert len(calls) == scratch.n_layers and values.values == []
    assert values.norms() is first and len(calls) == scratch.n_layers
    np.testing.assert_allclose(first, explain.value_norms(scratch, TEXT), rtol=1e-4, atol=1e-5)


def test_norms_that_fail_leave_the_caveat_without_its_norm_clause(monkeypatch: pytest.MonkeyPatch) -> None:
    """An accelerator out of memory while the switch makes the norms: the page goes on (no
    exception), the caveat says what attention alone says."""
    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_MAX_CHARS", "ATTNVIZ_MAX_TOKENS", "ATTNVIZ_LANG"):
        monkeypatch.delenv(key, raising=False)

    def out_of_memory(self: explain.PassValues) -> np.ndarray:
        raise torch.OutOfMemoryError("CUDA out of memory (a test)")

    monkeypatch.setattr(explain.PassValues, "norms", out_of_memory)
    text = "Norms that fail: " + " ".join(f"item{i}" for i in range(25)) + "."
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["text"] = text
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(str(c.value) for c in at.caption)
    assert "of its attention to" in captions and "by norm-based weights" not in captions, captions
