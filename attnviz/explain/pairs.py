"""Pairs of texts, numpy only. Minimal pairs: which heads move a token's attention when one word
changes. Sentence pairs: how much each text's tokens read their own text and how much the other
one (bertviz #67, #72, #111: "how does B summarise A?"), for `model.attend(a, pair=b)`;
blocks[l, h, r, c] is the mean, over the ordinary tokens of text r, of the weight they give to the
ordinary tokens of text c; the weight on [CLS] and [SEP] is left apart, so a row of blocks adds up
to the share of text r's rows that does not go to a special token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..result import Attention


@dataclass(frozen=True, eq=False)
class MinimalPair:
    """How one changed word moves the attention of `query` over `keys`, per layer and head.

    diff:   (layers, heads, len(keys)) float32, att_b[l, h, query, key] - att_a[l, h, query, key].
    score:  (layers, heads): diff[..., -1] - diff[..., 0] with two or more keys (how far b moves
            the query's weight from the first key towards the last), diff[..., 0] with one.
    ranked: (layer, head) pairs, largest score first.
    """

    query: int
    keys: list[int]
    tokens_a: list[str]
    tokens_b: list[str]
    diff: np.ndarray
    score: np.ndarray
    ranked: list[tuple[int, int]]


def find_token(att: Attention, word: str, occurrence: int = 0) -> int:
    """Index of the `occurrence`-th token equal to `word` (case-insensitive); ValueError if none."""
    hits = [i for i, t in enumerate(att.tokens) if t.casefold() == word.strip().casefold()]
    if occurrence >= len(hits) or occurrence < -len(hits):
        raise ValueError(f"token {word!r} (occurrence {occurrence}) not among {att.tokens}")
    return hits[occurrence]


def minimal_pair(att_a: Attention, att_b: Attention, query: int | str, keys: Sequence[int | str]) -> MinimalPair:
    """Compare two texts of equal token length that differ in one word ("tired" / "wide"):
    which heads move `query`'s attention between `keys`? Strings are looked up in att_a."""
    if att_a.weights.shape != att_b.weights.shape:
        if att_a.n != att_b.n:
            raise ValueError(
                f"a minimal pair needs texts of equal token length: {att_a.n} and {att_b.n} tokens; "
                "change one word for another that is a single token too"
            )
        raise ValueError(f"attention shapes differ: {att_a.weights.shape} and {att_b.weights.shape}")
    q = find_token(att_a, query) if isinstance(query, str) else int(query)
    ks = [find_token(att_a, k) if isinstance(k, str) else int(k) for k in keys]
    if not ks:
        raise ValueError("give at least one key token")
    for i in (q, *ks):
        if not 0 <= i < att_a.n:
            raise IndexError(f"token {i} out of range 0..{att_a.n - 1}")
    diff = att_b.weights[:, :, q, ks] - att_a.weights[:, :, q, ks]  # (L, H, K)
    score = diff[..., -1] - diff[..., 0] if len(ks) > 1 else diff[..., 0]
    order = np.argsort(-score, axis=None, kind="stable")
    ranked = [(int(layer), int(head)) for layer, head in zip(*np.unravel_index(order, score.shape), strict=True)]
    return MinimalPair(q, ks, list(att_a.tokens), list(att_b.tokens), diff, score, ranked)


def pair_segments(att: Attention) -> np.ndarray:
    """(n,) int: 0 for text A's tokens, 1 for text B's, -1 for specials, from `att.segments`
    or the layout "[CLS] A [SEP] B [SEP]". ValueError when the result is not a sentence pair."""
    att.require_square("pair blocks")
    if att.segments:
        seg = np.array(att.segments, dtype=np.int64)
    else:  # B begins after the first special token that follows an ordinary one
        special = np.asarray(att.special, dtype=bool)
        in_b = np.cumsum(special & (np.arange(att.n) > np.argmax(~special))) > 0
        seg = np.where(special, -1, in_b.astype(np.int64))
    if not ((seg == 0).any() and (seg == 1).any()):
        raise ValueError(
            "pair blocks need a sentence pair: give the model two texts (model.attend(a, pair=b)), "
            'read as "[CLS] A [SEP] B [SEP]"'
        )
    return seg


def pair_blocks(att: Attention) -> np.ndarray:
    """(layers, heads, 2, 2) float64: [r, c] = the mean share of text r's rows sent to text c
    (r, c: 0 = A, 1 = B), specials apart on both sides."""
    texts = (pair_segments(att)[:, None] == np.arange(2)).astype(np.float64)  # (n, 2) one-hot, specials in neither
    return texts.T @ att.weights.astype(np.float64) @ texts / texts.sum(0)[:, None]  # sums over blocks / rows of r


def across_share(blocks: np.ndarray) -> np.ndarray:
    """(layers, heads): the mean of A -> B and B -> A, how much a head reads across the pair."""
    b = np.asarray(blocks, dtype=np.float64)
    if b.shape[-2:] != (2, 2):
        raise ValueError(f"blocks must have shape (layers, heads, 2, 2), got {b.shape}")
    return (b[..., 0, 1] + b[..., 1, 0]) / 2
