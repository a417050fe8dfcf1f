"""Sentence pairs: how much each text's tokens read their own text and how much the other one
(bertviz #67, #72, #111: "how does B summarise A?"), for `model.attend(a, pair=b)`. Numpy only.
blocks[l, h, r, c] is the mean, over the ordinary tokens of text r, of the weight they give to the
ordinary tokens of text c; the weight on [CLS] and [SEP] is left apart, so a row of blocks adds up
to the share of text r's rows that does not go to a special token.
"""

from __future__ import annotations

import numpy as np

from ..result import Attention


def pair_segments(att: Attention) -> np.ndarray:
    """(n,) int: 0 for text A's tokens, 1 for text B's, -1 for specials, from `att.segments`
    or the layout "[CLS] A [SEP] B [SEP]". ValueError when the result is not a sentence pair."""
    att.require_square("pair blocks")
    if att.segments:
        seg = np.array(att.segments, dtype=np.int64)
    else:
        seg = np.full(att.n, -1, dtype=np.int64)
        text, seen_a = 0, False
        for i, special in enumerate(att.special):
            if special:
                text = 1 if seen_a else 0
            else:
                seen_a = seen_a or text == 0
                seg[i] = text
    if not ((seg == 0).any() and (seg == 1).any()):
        raise ValueError(
            "pair blocks need a sentence pair: give the model two texts (model.attend(a, pair=b)), "
            'read as "[CLS] A [SEP] B [SEP]"'
        )
    return seg


def pair_blocks(att: Attention) -> np.ndarray:
    """(layers, heads, 2, 2) float64: [r, c] = the mean share of text r's rows sent to text c
    (r, c: 0 = A, 1 = B), specials apart on both sides."""
    seg = pair_segments(att)
    w = att.weights.astype(np.float64)
    out = np.empty((att.n_layers, att.n_heads, 2, 2))
    for r in (0, 1):
        rows = w[:, :, seg == r, :]  # (L, H, n_r, n)
        for c in (0, 1):
            out[:, :, r, c] = rows[..., seg == c].sum(-1).mean(-1)
    return out


def across_share(blocks: np.ndarray) -> np.ndarray:
    """(layers, heads): the mean of A -> B and B -> A, how much a head reads across the pair."""
    b = np.asarray(blocks, dtype=np.float64)
    if b.shape[-2:] != (2, 2):
        raise ValueError(f"blocks must have shape (layers, heads, 2, 2), got {b.shape}")
    return (b[..., 0, 1] + b[..., 1, 0]) / 2
