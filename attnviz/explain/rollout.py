"""Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers", §3).
Numpy only: takes an `Attention` or a (layers, heads, n, n) array."""

from __future__ import annotations

import numpy as np
import torch

from ._arrays import AttentionLike, as_weights, read_only_view

__all__ = ["rollout", "rollout_layers"]


def _residual_layers(w: np.ndarray, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Â_l = (mean_h A[l, h] + I) / rowsum: the residual connection as attention to oneself.
    (L, n, n) tensor."""
    n = w.shape[-1]
    t = read_only_view(w)
    a = t.sum(dim=1, dtype=dtype) / w.shape[1] + torch.eye(n, dtype=dtype)  # (L, n, n)
    return a / a.sum(dim=-1, keepdim=True)


def rollout_layers(att: AttentionLike, start_layer: int = 0) -> np.ndarray:
    """Rollout after each layer from `start_layer` on: (layers - start_layer, n, n) float32.

    R_start = Â_start, R_l = Â_l R_{l-1}; entry [k] is the rollout up to layer start_layer + k.
    """
    w = as_weights(att)
    if not 0 <= start_layer < w.shape[0]:
        raise IndexError(f"start_layer {start_layer} out of range 0..{w.shape[0] - 1}")
    with torch.inference_mode():
        a = _residual_layers(w[start_layer:], torch.float32)
        for k in range(1, a.shape[0]):
            a[k] = a[k] @ a[k - 1]  # (n, n): a product of row-stochastic matrices stays one
        return a.numpy()


def rollout(att: AttentionLike, start_layer: int = 0) -> np.ndarray:
    """Attention rollout (n, n) float32: R = Â_L ... Â_start. Row i: how much of the top-layer
    token i traces back to input token j, if attention and residuals mixed tokens linearly."""
    return rollout_layers(att, start_layer)[-1]
