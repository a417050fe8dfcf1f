"""Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers", §3).
Numpy only (no torch): takes an `Attention` or a (layers, heads, n, n) array."""

from __future__ import annotations

import numpy as np

from ._arrays import AttentionLike, as_weights


def _residual_layers(w: np.ndarray, dtype: type[np.floating] = np.float64) -> np.ndarray:
    """Â_l = (mean_h A[l, h] + I) / rowsum: the residual connection as attention to oneself.
    (L, n, n), a new array of `dtype`."""
    n = w.shape[-1]
    a = w.sum(axis=1, dtype=dtype)  # (L, n, n)
    a /= w.shape[1]
    a += np.eye(n, dtype=dtype)
    a /= a.sum(axis=-1, keepdims=True)
    return a


def rollout_layers(att: AttentionLike, start_layer: int = 0) -> np.ndarray:
    """Rollout after each layer from `start_layer` on: (layers - start_layer, n, n) float32,
    R_start = Â_start, R_l = Â_l R_{l-1}."""
    w = as_weights(att)
    if not 0 <= start_layer < w.shape[0]:
        raise IndexError(f"start_layer {start_layer} out of range 0..{w.shape[0] - 1}")
    a = _residual_layers(w[start_layer:], np.float32)
    for k in range(1, a.shape[0]):
        a[k] = a[k] @ a[k - 1]  # (n, n): a product of row-stochastic matrices stays one
    return a


def rollout(att: AttentionLike, start_layer: int = 0) -> np.ndarray:
    """Attention rollout (n, n) float32: R = Â_L ... Â_start. Row i: how much of the top-layer
    token i traces back to input token j, if attention and residuals mixed tokens linearly."""
    return rollout_layers(att, start_layer)[-1]
