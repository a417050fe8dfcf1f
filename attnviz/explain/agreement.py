"""Rank agreement between two token scores (Jain & Wallace 2019, §4): Kendall's tau-b and
Spearman's rho, with ties handled. Numpy only."""

from __future__ import annotations

import math

import numpy as np

from ..result import Attention


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties sharing their average rank."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts  # ranks before each distinct value
    return (first + (counts + 1) / 2.0)[inverse]


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b: (concordant - discordant) / sqrt((pairs - ties_a)(pairs - ties_b)).
    NaN when either input is constant. O(n^2) memory: fine for a sentence's tokens."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"rankings differ in length: {a.size} and {b.size}")
    iu = np.triu_indices(a.size, k=1)
    sa = np.sign(a[:, None] - a[None, :])[iu]  # one entry per pair i < j
    sb = np.sign(b[:, None] - b[None, :])[iu]
    denom = math.sqrt(float(np.count_nonzero(sa)) * float(np.count_nonzero(sb)))
    return float((sa * sb).sum() / denom) if denom > 0 else math.nan


def spearman_rho(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho: Pearson correlation of the (tie-averaged) ranks. NaN for constant input."""
    ra = _ranks(np.asarray(a, dtype=np.float64).ravel())
    rb = _ranks(np.asarray(b, dtype=np.float64).ravel())
    if ra.shape != rb.shape:
        raise ValueError(f"rankings differ in length: {ra.size} and {rb.size}")
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = math.sqrt(float(ra @ ra) * float(rb @ rb))
    return float(ra @ rb / denom) if denom > 0 else math.nan


def agreement(a: np.ndarray, b: np.ndarray, keep: Attention | np.ndarray | None = None) -> dict[str, float]:
    """Rank agreement of two scores over the same tokens: {"kendall", "spearman", "n"}.

    keep: a boolean mask of the tokens to compare, or an Attention whose special tokens are
    left out (their huge attention would decide the ranking); None compares every token.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"scores must be two vectors over the same tokens, got {a.shape} and {b.shape}")
    if isinstance(keep, Attention):
        keep = ~keep.special
    mask = np.ones(a.size, dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
    if mask.shape != a.shape:
        raise ValueError(f"keep mask has {mask.size} entries for {a.size} tokens")
    return {
        "kendall": kendall_tau(a[mask], b[mask]),
        "spearman": spearman_rho(a[mask], b[mask]),
        "n": float(mask.sum()),
    }


def share(values: np.ndarray) -> np.ndarray:
    """Scores rescaled so their absolute values sum to 1 (float64): methods on different scales
    side by side on one axis, signs kept."""
    v = np.asarray(values, dtype=np.float64)
    return v / max(float(np.abs(v).sum()), 1e-12)
