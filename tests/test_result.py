"""The Attention result and its numpy helpers, on hand-built matrices."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz import Attention


def _random_attention(n: int = 6, layers: int = 2, heads: int = 3, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.random((layers, heads, n, n)).astype(np.float32)
    return w / w.sum(-1, keepdims=True)


def test_validates_shapes() -> None:
    with pytest.raises(ValueError, match="shape"):
        Attention(tokens=["a"], weights=np.ones((1, 1, 2, 3)), model="m")
    with pytest.raises(ValueError, match="tokens"):
        Attention(tokens=["a"], weights=np.ones((1, 1, 2, 2)), model="m")


def test_head_and_mean_of_heads() -> None:
    w = _random_attention()
    att = Attention(tokens=list("abcdef"), weights=w, model="m")
    np.testing.assert_array_equal(att.head(1, 2), w[1, 2])
    np.testing.assert_allclose(att.head(1), w[1].mean(0))
    with pytest.raises(IndexError):
        att.head(2, 0)


def test_merge_words_sums_to_and_averages_from_pieces() -> None:
    w = _random_attention()
    special = np.array([1, 0, 0, 0, 0, 1], bool)
    att = Attention(
        tokens=["[CLS]", "un", "believ", "able", "!", "[SEP]"],
        weights=w,
        model="m",
        special=special,
        word_ids=[-1, 0, 0, 0, 1, -1],
    )
    merged = att.merge_words()
    assert merged.tokens == ["[CLS]", "unbelievable", "!", "[SEP]"]
    np.testing.assert_allclose(merged.weights.sum(-1), 1.0, atol=1e-6)
    # row of the merged word = mean of its pieces' rows; column = sum of its pieces' columns
    expected = w[:, :, 1:4, :].mean(2)[..., 1:4].sum(-1)
    np.testing.assert_allclose(merged.weights[:, :, 1, 1], expected, atol=1e-6)
    np.testing.assert_allclose(merged.weights[:, :, 0, 1], w[:, :, 0, 1:4].sum(-1), atol=1e-6)


def test_without_special_renormalises_rows() -> None:
    w = _random_attention()
    special = np.array([1, 0, 0, 0, 0, 1], bool)
    att = Attention(tokens=list("abcdef"), weights=w, model="m", special=special)
    plain = att.without_special()
    assert plain.tokens == list("bcde")
    np.testing.assert_allclose(plain.weights.sum(-1), 1.0, atol=1e-6)
    ratio = plain.weights[0, 0, 0] / w[0, 0, 1, 1:5]
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-5)  # proportions among kept tokens unchanged
