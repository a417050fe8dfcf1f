"""Issue 22 item 2: `attnviz.lab.flash_attention` equals softmax(Q K^T / sqrt(d)) V to 1e-6 for
several block sizes, masks and lengths that are not multiples of the block, and its record of
steps is the online softmax: running maxima that only grow, rescaling by exp(old - new), the
running sums ending at the softmax denominators, causal blocks above the diagonal skipped."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

import attnviz.lab
from attnviz.lab.flash import flash_attention


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, allowed: np.ndarray | None = None) -> np.ndarray:
    s = (q.astype(np.float64) @ k.astype(np.float64).T) / math.sqrt(q.shape[1])
    if allowed is not None:
        s = np.where(allowed, s, -np.inf)
    w = np.exp(s - s.max(axis=1, keepdims=True))
    return (w / w.sum(axis=1, keepdims=True)) @ v.astype(np.float64)


def qkv(n_q: int, n_k: int, d: int = 8, seed: int = 0, dtype: type = np.float64) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return tuple((rng.standard_normal(shape) * 2).astype(dtype) for shape in ((n_q, d), (n_k, d), (n_k, d + 3)))


@pytest.mark.parametrize(("n", "block"), list(itertools.product([1, 5, 17, 50, 64], [1, 3, 7, 16, 64, 100])))
def test_equals_plain_attention_plain_causal_and_masked(n: int, block: int) -> None:
    q, k, v = qkv(n, n, seed=n * 100 + block)
    np.testing.assert_allclose(flash_attention(q, k, v, block).output, reference(q, k, v), atol=1e-6, rtol=0)
    causal = np.tril(np.ones((n, n), dtype=bool))
    np.testing.assert_allclose(
        flash_attention(q, k, v, block, causal=True).output, reference(q, k, v, causal), atol=1e-6, rtol=0
    )
    allowed = np.random.default_rng(block).random((n, n)) < 0.4
    allowed[np.arange(n), np.random.default_rng(n).integers(0, n, n)] = True  # every row sees a key
    np.testing.assert_allclose(
        flash_attention(q, k, v, block, mask=allowed).output, reference(q, k, v, allowed), atol=1e-6, rtol=0
    )


def test_rectangular_float32_and_torch_sdpa() -> None:
    q, k, v = qkv(23, 41, d=16, dtype=np.float32)
    got = flash_attention(q, k, v, block=8).output
    np.testing.assert_allclose(got, reference(q, k, v), atol=1e-6, rtol=0)
    sdpa = torch.nn.functional.scaled_dot_product_attention(*(torch.from_numpy(x).double() for x in (q, k, v)))
    np.testing.assert_allclose(got, sdpa.numpy(), atol=1e-6, rtol=0)
    late = np.tril(np.ones((23, 41), dtype=bool), k=41 - 23)  # the 23 queries are the last of 41 positions
    np.testing.assert_allclose(flash_attention(q, k, v, 8, causal=True).output, reference(q, k, v, late), atol=1e-6)


def test_the_record_is_the_online_softmax() -> None:
    q, k, v = qkv(20, 20, seed=3)
    result = flash_attention(q, k, v, block=6, causal=True)
    assert result.block == 6 and len(result.steps) == 4 * 4  # ceil(20 / 6) blocks each way
    skipped = [(s.queries, s.keys) for s in result.steps if s.skipped]
    assert skipped == [((i0, min(20, i0 + 6)), (j0, min(20, j0 + 6))) for i0 in range(0, 20, 6)
                       for j0 in range(0, 20, 6) if j0 > min(20, i0 + 6) - 1]  # fmt: skip
    scores = np.where(np.tril(np.ones((20, 20), dtype=bool)), (q @ k.T) / math.sqrt(8), -np.inf)
    for i0 in range(0, 20, 6):
        rows = [s for s in result.steps if s.queries[0] == i0]
        for s in rows:
            assert (s.max_after >= s.max_before).all()  # the running maximum only grows
            if not s.skipped:
                np.testing.assert_allclose(s.rescale, np.exp(s.max_before - s.max_after))
                np.testing.assert_allclose(s.scores, scores[s.queries[0] : s.queries[1], s.keys[0] : s.keys[1]])
        block = scores[i0 : i0 + 6]
        np.testing.assert_allclose(rows[-1].max_after, block.max(axis=1))
        np.testing.assert_allclose(rows[-1].sum_after, np.exp(block - block.max(axis=1, keepdims=True)).sum(axis=1))
    assert result.largest_block_bytes == 6 * 6 * 8  # one tile of float64 scores, never 20 x 20


def test_lab_reexports_it_and_bad_input_is_refused() -> None:
    assert attnviz.lab.flash_attention is flash_attention
    q, k, v = qkv(4, 4)
    assert not flash_attention(q, k, v, 2, record=False).steps
    with pytest.raises(ValueError, match="block must be at least 1"):
        flash_attention(q, k, v, 0)
    with pytest.raises(ValueError, match="need q"):
        flash_attention(q, k[:, :3], v)
    with pytest.raises(ValueError, match="query row 2 may attend to no key"):
        flash_attention(q, k, v, mask=np.array([[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]]))
    with pytest.raises(ValueError, match="mask must have shape"):
        flash_attention(q, k, v, mask=np.ones((3, 4), dtype=bool))
