"""Attention sinks (Gu et al. 2024, "When Attention Sink Emerges in Language Models", code:
sail-sg/Attention-Sink): head h of layer l sinks on token k when alpha_k, the attention k gets
averaged over the queries that can see it, exceeds epsilon. Every (layer, head, token) above
epsilon counts (Gu et al.'s Sink_k^epsilon is the share of heads that sink on k). Beside it, the
norm of k's value vector in that head (Kobayashi et al. 2020): a sink usually carries little.

Numpy only. `hide_sinks` removes sink columns and renormalises the rows; `SinkScores.parking()`
picks those columns (the metric alone also flags a content word one head focuses on).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..result import Attention
from ._arrays import AttentionLike, as_weights
from .norms import NormWeights

SINK_THRESHOLD = 0.3  # Gu et al. 2024, epsilon
# `parking` keeps tokens that at least this share of heads sink on (or with short value vectors).
PARKING_HEADS = 0.1


@dataclass(frozen=True, eq=False)
class SinkScores:
    """Sink scores of one text. Per (layer, head, token), (layers, heads, n): `received` alpha_k,
    `value_norms` ||f_h(x_k)|| (NaN without norms). Per (layer, head), (layers, heads): `share`
    the largest alpha_k of the head, `token` its k, `is_sink` whether the head sinks on any token
    (share > threshold), `value_norm` the value norm at `token`, `mean_value_norm` the mean of
    ||f_h(x_j)|| over tokens j (NaN without norms)."""

    share: np.ndarray
    token: np.ndarray
    is_sink: np.ndarray
    value_norm: np.ndarray
    mean_value_norm: np.ndarray
    threshold: float
    received: np.ndarray
    value_norms: np.ndarray

    @property
    def sinks(self) -> np.ndarray:
        """(layers, heads, n) bool: head (l, h) sinks on token k (alpha_k > threshold)."""
        return self.received > self.threshold

    @property
    def columns(self) -> np.ndarray:
        """Sorted indices of the tokens that are a sink in at least one head."""
        return np.flatnonzero(self.sinks.any(axis=(0, 1)))

    @property
    def rate(self) -> float:
        """Share of heads that sink on some token."""
        return float(self.is_sink.mean())

    def rate_on(self, column: int) -> float:
        """Gu et al.'s Sink_k^epsilon for k = `column`: the share of all heads that sink on it."""
        return float(self.heads_on(column).mean())

    def heads_on(self, column: int) -> np.ndarray:
        """(layers, heads) bool: the heads that sink on token `column`."""
        return self.sinks[..., column]

    def heads_on_any(self, columns: np.ndarray | list[int]) -> np.ndarray:
        """(layers, heads) bool: the heads that sink on at least one of `columns`."""
        return np.asarray(self.sinks[..., np.asarray(columns, dtype=int)].any(-1))

    def value_ratio(self, column: int) -> np.ndarray:
        """(layers, heads): ||f_h(x_column)|| over the head's mean value norm (NaN without norms)."""
        return self.value_norms[..., column] / self.mean_value_norm

    def parking(self, min_heads: float = PARKING_HEADS) -> np.ndarray:
        """Sorted indices of the tokens where attention is parked rather than read: a sink in at
        least `min_heads` of all heads, or one whose value vectors are on average shorter than
        their heads' mean there (a focus with a long value vector is not listed)."""
        keep = []
        for k in self.columns:
            on = self.heads_on(int(k))
            ratio = self.value_ratio(int(k))[on]
            short = bool(np.isfinite(ratio).all() and ratio.mean() < 1.0)
            if on.mean() >= min_heads or short:
                keep.append(int(k))
        return np.array(keep, dtype=int)


def received(att: AttentionLike, causal: bool | None = None) -> np.ndarray:
    """(layers, heads, n) float64: mean attention each token receives from the queries that can
    see it (causal: the n - k at or after k; None takes an `Attention`'s own flag)."""
    w = as_weights(att)
    n = w.shape[-1]
    causal = bool(getattr(att, "causal", False)) if causal is None else causal
    seen_by = (n - np.arange(n)) if causal else np.full(n, n)
    return w.sum(axis=-2, dtype=np.float64) / seen_by


def sink_scores(
    att: AttentionLike,
    threshold: float = SINK_THRESHOLD,
    norms: NormWeights | np.ndarray | None = None,
    *,
    causal: bool | None = None,
) -> SinkScores:
    """Which heads sink, on which tokens, and how much those tokens' value vectors carry.
    `norms`: a NormWeights or its (layers, heads, n) value norms; `causal`: as `received`."""
    if not 0.0 < threshold < 1.0:
        raise ValueError("threshold must lie between 0 and 1")
    got = received(att, causal)  # (L, H, n)
    token, share = got.argmax(-1), got.max(-1)
    value_norms = np.full(got.shape, np.nan)
    if norms is not None:
        given = norms if isinstance(norms, np.ndarray) else norms.value_norms
        if given.shape != got.shape:
            raise ValueError(f"value norms {given.shape} do not match attention {got.shape}")
        value_norms = given.astype(np.float64)
    value_norm = np.take_along_axis(value_norms, token[..., None], -1)[..., 0]
    return SinkScores(
        share, token, share > threshold, value_norm, value_norms.mean(-1), float(threshold), got, value_norms
    )


def removed_share(att: AttentionLike, columns: np.ndarray | list[int]) -> np.ndarray:
    """(layers, heads) float64: the share of each head's attention on `columns`, averaged over
    the query rows: what hiding them takes away (no copy of the weights is made)."""
    cols = np.asarray(columns, dtype=int)
    w = as_weights(att)
    if cols.size == 0:
        return np.zeros(w.shape[:2])
    return w[..., cols].sum(-1, dtype=np.float64).mean(-1)


def hide_sinks(att: Attention, columns: np.ndarray | list[int]) -> tuple[Attention, np.ndarray]:
    """`att` with `columns` set to 0 and rows renormalised (a row with nothing left keeps its
    zeros), and the share removed per (layer, head) averaged over rows, float64."""
    cols = np.asarray(columns, dtype=int)
    if cols.size and (cols.min() < 0 or cols.max() >= att.n):
        raise IndexError(f"sink columns must lie in 0..{att.n - 1}")
    if cols.size == 0:
        return att, np.zeros((att.n_layers, att.n_heads))
    removed = removed_share(att, cols)
    w = att.weights.copy()
    w[..., cols] = 0.0
    left = w.sum(-1, keepdims=True)
    np.divide(w, left, out=w, where=left > np.finfo(np.float32).tiny)
    return replace(att, weights=w), removed
