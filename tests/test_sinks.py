"""Attention sinks (Gu et al. 2024): the per-head metric against a plain loop, its epsilon, the
causal average, the value norms beside it, and hiding the sink columns for the views."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz import explain, views
from attnviz.explain.sinks import received
from attnviz.models import PretrainedModel
from attnviz.result import Attention

from .conftest import SENTENCES


def plain_sinks(w: np.ndarray, threshold: float, causal: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per head: the mean attention each token k receives from the queries that see it, its
    largest value, which k, and whether it exceeds the threshold. Loops, as the metric reads."""
    L, H, n, _ = w.shape
    share, token = np.zeros((L, H)), np.zeros((L, H), dtype=int)
    for layer in range(L):
        for head in range(H):
            means = []
            for k in range(n):
                queries = range(k, n) if causal else range(n)
                means.append(sum(w[layer, head, i, k] for i in queries) / len(queries))
            token[layer, head] = int(np.argmax(means))
            share[layer, head] = max(means)
    return share, token, share > threshold


def attention_of(w: np.ndarray, causal: bool = False, tokens: list[str] | None = None) -> Attention:
    n = w.shape[-1]
    return Attention(
        tokens=tokens or [f"t{i}" for i in range(n)], weights=w.astype(np.float32), model="hand", causal=causal
    )


def random_rows(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = np.exp(rng.normal(size=shape) * 2)
    return w / w.sum(-1, keepdims=True)


def test_sink_scores_match_the_plain_metric() -> None:
    w = random_rows((2, 3, 6, 6))
    w[1, 2] = 0.1 / 5
    w[1, 2, :, 4] = 0.9  # layer 1, head 2 parks 90% on token 4
    s = explain.sink_scores(attention_of(w), threshold=0.3)
    share, token, sink = plain_sinks(w, 0.3)
    np.testing.assert_allclose(s.share, share, atol=1e-6)
    assert (s.token == token).all() and (s.is_sink == sink).all()
    assert s.is_sink[1, 2] and s.token[1, 2] == 4 and s.share[1, 2] == pytest.approx(0.9)
    assert 4 in s.columns and s.heads_on(4)[1, 2]
    assert s.rate == pytest.approx(sink.mean())
    assert np.isnan(s.value_norm).all()  # no norms given


def test_the_threshold_is_strict_and_uniform_heads_never_sink() -> None:
    uniform = np.full((1, 1, 4, 4), 0.25)
    assert not explain.sink_scores(uniform, threshold=0.25).is_sink.any()  # exceed, not reach
    assert explain.sink_scores(uniform, threshold=0.2).is_sink.all()
    with pytest.raises(ValueError):
        explain.sink_scores(uniform, threshold=1.5)


def test_under_a_causal_mask_a_token_is_averaged_over_the_queries_that_see_it() -> None:
    n = 5
    w = np.tril(np.ones((n, n)))
    w = (w / w.sum(-1, keepdims=True))[None, None]  # each query spreads evenly over what it sees
    got = received(attention_of(w, causal=True))[0, 0]
    expected = [sum(w[0, 0, i, k] for i in range(k, n)) / (n - k) for k in range(n)]
    np.testing.assert_allclose(got, expected)
    share, token, _ = plain_sinks(w, 0.3, causal=True)
    np.testing.assert_allclose(explain.sink_scores(attention_of(w, causal=True)).share[0, 0], share[0, 0])
    assert explain.sink_scores(attention_of(w, causal=True)).token[0, 0] == token[0, 0]


def test_value_norms_sit_beside_each_heads_sink(minilm: PretrainedModel, tired: Attention) -> None:
    norms = explain.norm_weights(minilm, SENTENCES[0])
    s = explain.sink_scores(tired, norms=norms)
    L, H = s.share.shape
    for layer in range(L):
        for head in range(H):
            k = s.token[layer, head]
            assert s.value_norm[layer, head] == pytest.approx(norms.value_norms[layer, head, k])
            assert s.mean_value_norm[layer, head] == pytest.approx(norms.value_norms[layer, head].mean(), rel=1e-5)


def test_minilm_sinks_on_special_tokens_whose_values_are_small(minilm: PretrainedModel, tired: Attention) -> None:
    """MiniLM parks attention on [CLS]/[SEP] in many heads; in those heads the sink's value
    vector is shorter than the head's average: much weight, little moved (Kobayashi et al. 2020)."""
    s = explain.sink_scores(tired, norms=explain.norm_weights(minilm, SENTENCES[0]))
    assert s.is_sink.sum() >= 10
    on_special = tired.special[s.token[s.is_sink]]
    assert on_special.mean() > 0.5
    ratio = s.value_norm[s.is_sink] / s.mean_value_norm[s.is_sink]
    assert np.median(ratio) < 0.7


def test_parked_attention_needs_many_heads_or_a_short_value(minilm: PretrainedModel) -> None:
    w = np.full((1, 20, 6, 6), 0.1 / 5)
    w[0, :4, :, 0] = 0.9  # 4 of 20 heads park on token 0
    w[0, 4, :, 3] = 0.9  # one head puts 90% on token 3
    w /= w.sum(-1, keepdims=True)
    plain = explain.sink_scores(w)
    assert plain.columns.tolist() == [0, 3] and plain.parking().tolist() == [0]  # one head in 20: a focus
    assert plain.parking(min_heads=0.05).tolist() == [0, 3]
    value_norms = np.ones((1, 20, 6), dtype=np.float32)
    value_norms[0, 4, 3] = 0.2  # ... unless its value vector is short there: then weight parked
    norms = explain.NormWeights(
        tokens=[f"t{i}" for i in range(6)],
        per_head=w.astype(np.float32),
        value_norms=value_norms,
        head_cosines=np.zeros((1, 6, 20, 20), dtype=np.float32),
        special=np.zeros(6, dtype=bool),
    )
    assert explain.sink_scores(w, norms=norms).parking().tolist() == [0, 3]


def test_in_minilm_cls_is_parked_and_the_coreference_focus_is_not(minilm: PretrainedModel, tired: Attention) -> None:
    s = explain.sink_scores(tired, norms=explain.norm_weights(minilm, SENTENCES[0]))
    animal = tired.tokens.index("animal")
    assert animal in s.columns.tolist()  # a head attends to "animal" from most tokens ...
    assert tired.tokens[s.parking()[0]] == "[CLS]" and animal not in s.parking().tolist()  # ... reading it


def test_hiding_sinks_zeroes_their_columns_and_renormalises_rows() -> None:
    w = random_rows((2, 2, 5, 5), seed=3)
    att = attention_of(w)
    hidden, removed = explain.hide_sinks(att, [0, 3])
    assert hidden.tokens == att.tokens and hidden.weights.shape == att.weights.shape
    assert (hidden.weights[..., [0, 3]] == 0).all()
    np.testing.assert_allclose(hidden.weights.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(removed, w[..., [0, 3]].sum(-1).mean(-1), atol=1e-6)
    # what is left keeps its proportions: each row is scaled, not reshuffled
    kept = [1, 2, 4]
    ratio = hidden.weights[..., kept] / w[..., kept]
    np.testing.assert_allclose(ratio, ratio[..., :1].repeat(3, -1), rtol=1e-5)
    same, none = explain.hide_sinks(att, [])
    assert same is att and (none == 0).all()
    with pytest.raises(IndexError):
        explain.hide_sinks(att, [7])


def test_a_row_that_gave_everything_to_the_sinks_stays_empty() -> None:
    w = np.full((1, 1, 3, 3), 1 / 3)
    w[0, 0, 2] = [1.0, 0.0, 0.0]
    hidden, removed = explain.hide_sinks(attention_of(w), [0])
    assert (hidden.weights[0, 0, 2] == 0).all()
    assert removed[0, 0] == pytest.approx((1 / 3 + 1 / 3 + 1) / 3)


def test_the_views_draw_the_hidden_map(tired: Attention) -> None:
    s = explain.sink_scores(tired)
    hidden, _ = explain.hide_sinks(tired, s.columns)
    fig = views.heatmap(hidden, 5, None)
    z = np.asarray(fig.data[0].z, dtype=float)
    np.testing.assert_allclose(z, hidden.head(5), atol=1e-6)
    assert np.allclose(z[:, s.columns], 0)
    for build in (views.model_view, lambda a: views.head_view(a, 5), lambda a: views.graph_view(a, 5, None)):
        assert build(hidden).data  # every view accepts it


def test_sink_scores_accept_a_bare_array_and_reject_mismatched_norms(minilm: PretrainedModel) -> None:
    w = random_rows((1, 2, 4, 4))
    assert explain.sink_scores(w).share.shape == (1, 2)
    norms = explain.norm_weights(minilm, SENTENCES[4])
    with pytest.raises(ValueError, match="do not match"):
        explain.sink_scores(w, norms=norms)


def test_removed_share_is_what_hiding_takes_away_without_copying() -> None:
    w = random_rows((2, 3, 5, 5), seed=4)
    _, removed = explain.hide_sinks(attention_of(w), [1, 4])
    np.testing.assert_allclose(explain.removed_share(w, [1, 4]), removed)
    plain = [[sum(w[layer, head, i, [1, 4]].sum() for i in range(5)) / 5 for head in range(3)] for layer in range(2)]
    np.testing.assert_allclose(explain.removed_share(w, [1, 4]), plain)
    assert (explain.removed_share(w, []) == 0).all()
