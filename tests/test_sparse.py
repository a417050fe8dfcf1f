"""Sparse attention patterns (attnviz/sparse.py, issue 22.3): each mask keeps rows summing to 1
over its allowed entries with masked entries exactly 0, the counts equal the formula, the
from-scratch model takes a pattern, and a seeded run shows induction failing with a short
window and working with a long one."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from attnviz import lab
from attnviz.lab.sparse import KINDS, additive_mask, row_counts, sparse_count, sparse_mask
from attnviz.scratch import MultiHeadSelfAttention, scaled_dot_product_attention
from attnviz.training import train

OPTIONS = [
    {"window": w, "global_tokens": g, "dilation": d, "random_keys": r}
    for w, g, d, r in itertools.product((0, 1, 3), (0, 2), (1, 3), (0, 2))
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("causal", [False, True])
def test_counts_equal_the_formula(kind: str, causal: bool) -> None:
    for n, options in itertools.product((1, 2, 5, 13, 40), OPTIONS):
        mask = sparse_mask(n, kind, causal=causal, seed=3, **options)
        assert mask.shape == (n, n) and mask.dtype == bool
        np.testing.assert_array_equal(mask.sum(axis=1), row_counts(n, kind, causal=causal, **options))
        assert int(mask.sum()) == sparse_count(n, kind, causal=causal, **options)
        assert mask.diagonal().all()  # no row is empty
        if causal:
            assert not np.triu(mask, 1).any()


def test_the_closed_forms_of_the_textbook() -> None:
    """A window of w keeps n(2w+1) - w(w+1) of n^2; global g keeps 2ng - g^2 + (n - g); the
    number grows linearly in n."""
    for n, w in ((16, 2), (100, 3), (1000, 8)):
        assert sparse_count(n, "window", window=w) == n * (2 * w + 1) - w * (w + 1)
    for n, g in ((16, 1), (100, 4)):
        assert sparse_count(n, "global", global_tokens=g) == 2 * n * g - g * g + (n - g)
    assert sparse_count(4000, "bigbird") / 4000**2 < 0.003


def test_the_window_and_the_dilated_window_by_hand() -> None:
    m = sparse_mask(6, "window", window=1)
    assert m[0].tolist() == [1, 1, 0, 0, 0, 0] and m[3].tolist() == [0, 0, 1, 1, 1, 0]
    d = sparse_mask(9, "dilated", window=2, dilation=3)
    assert np.flatnonzero(d[4]).tolist() == [1, 4, 7]
    assert np.flatnonzero(d[0]).tolist() == [0, 3, 6]


def test_bigbird_is_window_global_and_seeded_random_keys() -> None:
    a, b = sparse_mask(30, "bigbird", seed=0), sparse_mask(30, "bigbird", seed=0)
    np.testing.assert_array_equal(a, b)
    assert (a != sparse_mask(30, "bigbird", seed=1)).any()
    base = sparse_mask(30, "window") | sparse_mask(30, "global")
    assert (a >= base).all()  # window and global are kept
    extra = (a & ~base).sum(axis=1)
    assert (extra[1:] == 2).all()  # two random keys a row (row 0 is global: it sees everything)


@pytest.mark.parametrize("kind", KINDS)
def test_rows_sum_to_one_over_allowed_entries_and_masked_entries_are_exactly_zero(kind: str) -> None:
    n = 23
    allowed = sparse_mask(n, kind, seed=1)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, n, 8, generator=g) * 4 for _ in range(3))
    _, w = scaled_dot_product_attention(q, k, v, additive_mask(allowed))
    w64 = w.double()
    assert bool((w[..., ~torch.as_tensor(allowed)] == 0).all())
    torch.testing.assert_close(w64.sum(-1), torch.ones(2, 3, n, dtype=torch.float64), atol=1e-6, rtol=0)
    # the same through the module the from-scratch models use
    attn = MultiHeadSelfAttention(16, 2)
    _, w2 = attn(torch.randn(1, n, 16, generator=g), allowed=torch.as_tensor(allowed), causal=True)
    mask = torch.as_tensor(allowed & np.tril(np.ones((n, n), dtype=bool)))
    assert bool((w2[..., ~mask] == 0).all())
    torch.testing.assert_close(w2.sum(-1), torch.ones(1, 2, n), atol=1e-6, rtol=0)


def test_bad_arguments_are_value_errors() -> None:
    for call in (
        lambda: sparse_mask(8, "star"),
        lambda: sparse_mask(0, "window"),
        lambda: sparse_mask(8, "window", window=-1),
        lambda: sparse_mask(8, "dilated", dilation=0),
        lambda: sparse_mask(10**5, "window"),
        lambda: train("copy", 5, sparse="star"),
    ):
        with pytest.raises(ValueError):
            call()


def test_the_lab_re_exports_it() -> None:
    assert lab.sparse_mask is sparse_mask and lab.sparse_count is sparse_count


def test_induction_fails_with_a_window_shorter_than_its_period_and_works_with_a_long_one() -> None:
    """Periods 6-14: the second copy must look back at least 5 tokens. Two layers of a window of
    2 reach 4 back: the held-out accuracy stays near chance (1/32). A window of 16 reaches every
    earlier token of the sequence, and the model learns the task as with full attention."""
    short = train("induction", 200, seed=0, sparse="window", window=2)
    long = train("induction", 200, seed=0, sparse="window", window=16)
    assert short.snapshots[-1].accuracy < 0.2
    assert long.snapshots[-1].accuracy >= 0.9
    maps = short.snapshots[-1].attention.weights  # (L, H, n, n): nothing outside the window
    n = maps.shape[-1]
    outside = ~sparse_mask(n, "window", window=2, causal=True)
    assert (maps[..., outside] == 0).all()
