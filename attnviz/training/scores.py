"""Head scores: how much of each head's attention sits where a pattern says it should.

A pattern gives, for each query row t, the key column it should look at (-1: not scored). The
score of a head is the mean, over scored rows, of A[t, col[t]]: 1 when every scored row puts all
its weight there, about 1/t for a head that looks everywhere equally. Numpy only.

    previous   col[t] = t - 1                          (Clark et al. 2019; Olsson et al. 2022)
    induction  col[t] = t - r + 1 on the second copy   (Olsson et al. 2022; REFERENCES.md)
    diagonal   the source token a copy / reverse target row must read
"""

from __future__ import annotations

import numpy as np

from ..result import Attention

SCORES = ("previous", "induction", "diagonal")


def pattern_score(weights: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """weights (..., B, H, n, n) or (..., H, n, n); cols (B, n) or (n,) with -1 where a row is
    not scored. Returns (..., H): the mean of A[t, cols[t]] over scored rows (and the batch);
    NaN when no row is scored."""
    w, c = np.asarray(weights), np.asarray(cols)
    if c.ndim == 1:
        w, c = w[..., None, :, :, :], c[None]  # a batch of one
    scored = c >= 0  # (B, n)
    index = np.where(scored, c, 0)[:, None, :, None]  # (B, 1, n, 1)
    index = index.reshape((1,) * (w.ndim - 4) + index.shape)
    picked = np.take_along_axis(w, index, axis=-1)[..., 0]  # (..., B, H, n)
    total = (picked * scored[:, None, :]).sum(axis=(-3, -1))  # (..., H)
    count = scored.sum()
    return total / count if count else np.full(total.shape, np.nan)


def previous_cols(n: int) -> np.ndarray:
    """(n,): row t looks at t - 1 (row 0 is not scored)."""
    return np.arange(n) - 1


def induction_cols(n: int, period: int, start: int = 1) -> np.ndarray:
    """(n,) for a block of `period` tokens starting at `start` and repeated right after it:
    rows of the second copy whose next token repeats look at t - period + 1."""
    cols = np.full(n, -1)
    t = np.arange(start + period, min(start + 2 * period - 1, n))
    cols[t] = t - period + 1
    return cols


def score_attention(att: Attention, patterns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each pattern's (layers, heads) score on one `Attention` (cols cut or padded to att.n)."""
    out = {}
    for name, cols in patterns.items():
        c = np.full(att.n, -1)
        c[: min(att.n, len(cols))] = np.asarray(cols)[: att.n]
        c[c >= att.n] = -1
        out[name] = pattern_score(att.weights, c)
    return out
