"""Value norms without the maps (explain/value_norms.py): the same numbers as norm_weights, the
sinks caveat's share the same as from the full norm-based weights, and the explorer at 512
tokens holding one attention-sized result, not two, so a layer or head change reruns nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import explain
from attnviz.app.server import registry
from attnviz.config import settings_from_env

TEXT = "The animal didn't cross the street because it was tired."
APP = str(Path(__file__).with_name("app_entry.py"))


@pytest.mark.parametrize("which", ["minilm", "scratch"])
def test_value_norms_equal_those_of_the_norm_based_weights(which: str, request: pytest.FixtureRequest) -> None:
    model = request.getfixturevalue(which)
    full = explain.norm_weights(model, TEXT)
    alone = explain.value_norms(model, TEXT)
    assert alone.shape == full.value_norms.shape == full.per_head.shape[:3]
    np.testing.assert_allclose(alone, full.value_norms, rtol=1e-4, atol=1e-5)


def test_moved_share_is_the_norm_based_share_of_the_column(minilm: attnviz.PretrainedModel) -> None:
    full = explain.norm_weights(minilm, TEXT)
    att = minilm.attend(TEXT)
    for layer, head, column in [(0, 0, 0), (3, 7, len(att.tokens) - 1), (5, 11, 2)]:
        rows = full.per_head[layer, head].astype(np.float64)
        expected = (rows / rows.sum(-1, keepdims=True))[:, column].mean()
        got = explain.moved_share(att.weights[layer, head], full.value_norms[layer, head], column)
        assert got == pytest.approx(expected, rel=1e-4)


def test_sink_scores_take_the_value_norms_alone(minilm: attnviz.PretrainedModel) -> None:
    att = minilm.attend(TEXT)
    full = explain.norm_weights(minilm, TEXT)
    a = explain.sink_scores(att, norms=full)
    b = explain.sink_scores(att, norms=full.value_norms)
    np.testing.assert_array_equal(a.value_norm, b.value_norm)
    np.testing.assert_array_equal(a.mean_value_norm, b.mean_value_norm)
    with pytest.raises(ValueError, match="do not match"):
        explain.sink_scores(att, norms=full.value_norms[:, :, :-1])


@pytest.mark.slow
def test_a_head_change_at_512_tokens_reruns_no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_MAX_CHARS", "ATTNVIZ_MAX_TOKENS"):
        monkeypatch.delenv(key, raising=False)
    calls: list[str] = []
    original = attnviz.PretrainedModel.attend

    def counting(self: attnviz.PretrainedModel, text: str, max_tokens: int | None = None) -> attnviz.Attention:
        calls.append(text)
        return original(self, text, max_tokens)

    monkeypatch.setattr(attnviz.PretrainedModel, "attend", counting)
    words = ["river", "bank", "money", "animal", "street", "tired", "wide", "dog", "man", "bites", "cat", "tree"]
    text = " ".join(words[(i * 7) % len(words)] + str(i % 3) for i in range(400))  # past 512 tokens
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["text"] = text
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert calls.count(text) == 1  # (the warm-up thread may have run its own short text)
    cache = registry.results(settings_from_env())
    # this text's entries only: other test files in the same worker may have left their own
    kinds: list[Any] = [key[0] for key in cache._items if isinstance(key[2], str) and text.startswith(key[2][:200])]
    assert "norms" not in kinds and "value_norms" in kinds  # the caveat's numbers, without a second map
    assert cache.bytes <= cache.max_bytes
    at.selectbox(key="head").set_value(4).run()
    at.selectbox(key="layer").set_value(2).run()
    assert not at.exception, [e.value for e in at.exception]
    assert calls.count(text) == 1  # the result stayed in the cache: no second forward
