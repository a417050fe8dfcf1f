"""Sinks counted per (layer, head, token) as Gu et al. 2024 count them (sail-sg/Attention-Sink):
every head whose alpha_k exceeds epsilon sinks on k, not only on its strongest token; and a
plain array can be told it is causal."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz import explain


def plain_alpha(w: np.ndarray, causal: bool) -> np.ndarray:
    """alpha_k per (layer, head): column k averaged over the queries that can see k (all n, or
    under a causal mask the n - k queries i >= k), by loops."""
    L, H, n, _ = w.shape
    out = np.zeros((L, H, n))
    for layer in range(L):
        for head in range(H):
            for k in range(n):
                queries = range(k, n) if causal else range(n)
                out[layer, head, k] = sum(w[layer, head, i, k] for i in queries) / len(queries)
    return out


def test_a_head_above_epsilon_on_two_tokens_counts_for_both() -> None:
    w = np.full((1, 2, 5, 5), 0.0)
    w[0, 0, :, 0], w[0, 0, :, 3], w[0, 0, :, [1, 2, 4]] = 0.45, 0.35, 0.2 / 3  # head 0: two sinks
    w[0, 1] = 0.2  # head 1: uniform, no sink
    s = explain.sink_scores(w, threshold=0.3)
    assert s.heads_on(0).tolist() == [[True, False]] and s.heads_on(3).tolist() == [[True, False]]
    assert s.columns.tolist() == [0, 3]
    assert s.token[0, 0] == 0 and s.share[0, 0] == pytest.approx(0.45)  # the strongest, kept beside
    assert s.rate_on(0) == s.rate_on(3) == 0.5 and s.rate == 0.5  # Sink_k: share of all heads on k
    assert s.heads_on_any([3]).tolist() == [[True, False]]
    np.testing.assert_allclose(s.received[0, 0, [0, 3]], [0.45, 0.35])


def test_every_head_and_token_above_epsilon_is_a_sink_as_the_plain_count_says() -> None:
    rng = np.random.default_rng(7)
    w = np.exp(rng.normal(size=(3, 4, 6, 6)) * 2.5)
    w /= w.sum(-1, keepdims=True)
    s = explain.sink_scores(w, threshold=0.2)
    alpha = plain_alpha(w, causal=False)
    np.testing.assert_allclose(s.received, alpha, atol=1e-7)
    assert (s.sinks == (alpha > 0.2)).all()
    for k in range(6):
        assert (s.heads_on(k) == (alpha[..., k] > 0.2)).all()
        assert s.rate_on(k) == pytest.approx((alpha[..., k] > 0.2).mean())
    assert s.columns.tolist() == [k for k in range(6) if (alpha[..., k] > 0.2).any()]
    assert (s.is_sink == (alpha > 0.2).any(-1)).all()


def test_a_causal_plain_array_averages_each_column_over_the_queries_that_see_it() -> None:
    n = 4
    w = np.tril(np.ones((n, n)))
    w = (w / w.sum(-1, keepdims=True))[None, None]  # each query spreads evenly over what it sees
    causal = explain.sink_scores(w, causal=True)
    expected = [(1 + 1 / 2 + 1 / 3 + 1 / 4) / 4, (1 / 2 + 1 / 3 + 1 / 4) / 3, (1 / 3 + 1 / 4) / 2, 1 / 4]
    np.testing.assert_allclose(causal.received[0, 0], expected)
    np.testing.assert_allclose(causal.received, plain_alpha(w, causal=True))
    full = explain.sink_scores(w)  # a plain array is not causal unless told
    np.testing.assert_allclose(full.received, plain_alpha(w, causal=False))
    assert causal.sinks[0, 0].tolist() == [True, True, False, False]  # 0.52, 0.36 over 0.3
    assert full.sinks[0, 0].tolist() == [True, False, False, False]  # 0.52, 0.27: k = 1 drops out


def test_value_norms_are_read_at_each_sunk_token_and_parking_uses_them() -> None:
    w = np.full((1, 20, 6, 6), 0.1 / 5)
    w[0, :4, :, 0] = 0.9  # 4 of 20 heads park on token 0
    w[0, 4, :, 0], w[0, 4, :, 3], w[0, 4, :, [1, 2, 4, 5]] = 0.35, 0.45, 0.05  # head 4: two tokens
    value_norms = np.ones((1, 20, 6), dtype=np.float32)
    value_norms[0, 4, 0] = 0.2  # short on token 0 (not head 4's strongest) ...
    value_norms[0, 4, 3] = 3.0  # ... long on token 3, its strongest
    norms = explain.NormWeights(
        tokens=[f"t{i}" for i in range(6)],
        per_head=w.astype(np.float32),
        value_norms=value_norms,
        head_cosines=np.zeros((1, 6, 20, 20), dtype=np.float32),
        special=np.zeros(6, dtype=bool),
    )
    s = explain.sink_scores(w, norms=norms)
    assert s.heads_on(0)[0, :5].all() and s.heads_on(0).sum() == 5  # head 4 counts for token 0 too
    assert s.value_ratio(0)[0, 4] == pytest.approx(0.2 / value_norms[0, 4].mean())
    assert s.value_norm[0, 4] == pytest.approx(3.0)  # the per-head field stays at the strongest token
    assert s.parking().tolist() == [0]  # token 3: one head in 20, a long value there: a focus
