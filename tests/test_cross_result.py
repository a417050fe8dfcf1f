"""Rectangular (cross-attention) results: `Attention.key_tokens`, the views that draw an
n_q x n_k map (escaping both token axes), the exports that carry it, and the views and methods
that read rows and columns as the same tokens saying why they cannot."""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import plotly.graph_objects as go
import pytest

from attnviz.explain import head_stats, rollout
from attnviz.export import attention_npz, head_csv, read_head_csv, weights_json
from attnviz.result import Attention
from attnviz.views import graph_view, head_view, heatmap, model_view, token_focus

QUERIES = ["<b>x</b>", "le", "chat"]
KEYS = ["the", "<img src=x onerror=alert(1)>", "cat", "&amp;", "sat"]


def _rect(layers: int = 2, heads: int = 3, seed: int = 0) -> Attention:
    rng = np.random.default_rng(seed)
    w = rng.random((layers, heads, len(QUERIES), len(KEYS))).astype(np.float32)
    w /= w.sum(-1, keepdims=True)
    return Attention(tokens=list(QUERIES), weights=w, model="m", key_tokens=tuple(KEYS))


def test_square_results_are_unchanged() -> None:
    w = np.full((1, 1, 2, 2), 0.5, dtype=np.float32)
    att = Attention(tokens=["a", "b"], weights=w, model="m")
    assert att.key_tokens == () and not att.cross
    assert att.keys == ["a", "b"] and att.n == att.n_keys == 2
    att.require_square("anything")  # no error
    with pytest.raises(ValueError, match=r"\(layers, heads, n, n\)"):
        Attention(tokens=["a", "b"], weights=np.zeros((1, 1, 2, 3), dtype=np.float32), model="m")


def test_rectangular_result_shape_and_checks() -> None:
    att = _rect()
    assert att.cross and att.n == 3 and att.n_keys == 5 and att.keys == KEYS
    assert att.head(1, 2).shape == (3, 5) and att.head(0).shape == (3, 5)
    with pytest.raises(ValueError, match="5 key tokens"):
        Attention(tokens=QUERIES, weights=np.zeros((1, 1, 3, 4), dtype=np.float32), model="m", key_tokens=KEYS)
    with pytest.raises(ValueError, match="2 tokens"):
        Attention(tokens=QUERIES[:2], weights=np.zeros((1, 1, 3, 5), dtype=np.float32), model="m", key_tokens=KEYS)


def _escaped(tokens: list[str]) -> list[str]:
    return [t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") for t in tokens]


def test_heatmap_draws_the_rectangle_and_escapes_both_axes() -> None:
    att = _rect()
    fig = heatmap(att, 1, 2)
    go.Figure(fig.to_dict())  # the dicts are valid plotly
    trace = fig.data[0]
    np.testing.assert_array_equal(np.asarray(trace.z), att.weights[1, 2])
    assert [k.rsplit(" (", 1)[0] for k in trace.x] == _escaped(KEYS)  # hover names each token whole
    assert [q.rsplit(" (", 1)[0] for q in trace.y] == _escaped(QUERIES)
    for shown, whole in [
        *zip(fig.layout.xaxis.ticktext, _escaped(KEYS), strict=True),
        *zip(fig.layout.yaxis.ticktext, _escaped(QUERIES), strict=True),
    ]:
        assert shown == whole or (shown.endswith("…") and whole.startswith(shown[:-1]))  # views/margins.py
    assert len(trace.x) == 5 and len(trace.y) == 3
    assert "<img" not in json.dumps(fig.to_plotly_json(), default=str)


def test_model_view_draws_rectangular_thumbnails() -> None:
    att = _rect()
    fig = model_view(att, focus=(1, 2))
    go.Figure(fig.to_dict())
    meta = fig.layout.meta
    step = meta["thumb"] + meta["gap"]
    z = np.asarray(fig.data[0].z, dtype=np.float64)
    cell = z[1 * step : 1 * step + 3, 2 * step : 2 * step + 5]  # thumbnail (1, 2): 3 rows x 5 columns
    np.testing.assert_allclose(cell, att.weights[1, 2], atol=1e-6)
    assert "<img" not in json.dumps(fig.to_plotly_json(), default=str)


def test_model_view_averages_a_long_rectangle_down() -> None:
    rng = np.random.default_rng(1)
    w = rng.random((1, 1, 4, 70)).astype(np.float32)
    att = Attention(tokens=list("abcd"), weights=w, model="m", key_tokens=tuple(f"k{i}" for i in range(70)))
    fig = model_view(att, thumb=32)
    z = np.asarray(fig.data[0].z, dtype=np.float64)
    assert fig.layout.meta["thumb"] == 32
    starts = [*((np.arange(32) * 70) // 32), 70]  # blocks of 2 or 3 columns
    want = [[w[0, 0, i, a:b].mean() for a, b in itertools.pairwise(starts)] for i in range(4)]
    np.testing.assert_allclose(z[:4, :32], want, atol=1e-6)
    assert np.isnan(z[4:32]).all()  # the 4 query rows fill the top of the square cell


def test_token_focus_reads_the_key_tokens() -> None:
    att = _rect()
    fig = token_focus(att, query=0, key=4)
    assert "sat" in fig.layout.title.text
    with pytest.raises(IndexError):
        token_focus(att, query=4, key=0)


@pytest.mark.parametrize(
    "call",
    [
        lambda a: head_view(a),
        lambda a: graph_view(a),
        lambda a: head_stats(a),
        lambda a: rollout(a),
        lambda a: replace(a, word_ids=[0, 0, 1]).merge_words(),
    ],
)
def test_what_needs_self_attention_says_why(call: Callable[[Attention], object]) -> None:
    with pytest.raises(ValueError, match=r"cross-attention|\(layers, heads, n, n\)"):
        call(_rect())


def test_without_special_says_why() -> None:
    att = _rect()
    att = Attention(
        tokens=att.tokens, weights=att.weights, model="m", key_tokens=att.key_tokens, special=np.array([1, 0, 0])
    )
    with pytest.raises(ValueError, match="cross-attention, 3 query tokens over 5"):
        att.without_special()


def test_exports_carry_the_key_tokens() -> None:
    att = _rect()
    _, tokens, m = read_head_csv(head_csv(att, 0, 1))
    assert tokens == KEYS
    np.testing.assert_allclose(m, att.weights[0, 1], rtol=1e-5)
    doc = json.loads(weights_json(att))
    assert doc["tokens"] == QUERIES and doc["key_tokens"] == KEYS
    assert np.asarray(doc["weights"]).shape == (2, 3, 3, 5)
    npz = np.load(io.BytesIO(attention_npz(att)))
    assert list(npz["key_tokens"]) == KEYS and npz["weights"].shape == (2, 3, 3, 5)
    square = Attention(tokens=["a", "b"], weights=np.full((1, 1, 2, 2), 0.5, dtype=np.float32), model="m")
    assert "key_tokens" not in json.loads(weights_json(square))
