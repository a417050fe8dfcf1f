"""||f_h(x_j)||, the length of what each token's value vector can give through each head
(Kobayashi et al. 2020, §3), from one forward that keeps no attention maps.

`norm_weights` returns the same numbers beside alpha ||f|| (layers, heads, n, n): at 512 tokens
of a 6 x 12 model that is 75 MB more, and with the explorer's own 75 MB result the pair
overflowed the app's 128 MB result cache, which then evicted one for the other on every rerun (two
forwards a rerun). The explorer's sinks caveat needs only the value norms: alpha ||f|| of one
head is its attention row times these (`moved_share`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

import numpy as np
import torch

from ..models.base import LayerParts, Runner
from .norms import _transformed

__all__ = ["moved_share", "value_norms"]


def value_norms(model: Runner, text: str) -> np.ndarray:
    """(layers, heads, n) float32: ||f_h(x_j)||, equal to `norm_weights(model, text).value_norms`.

    Works where `norm_weights` does (the layers must come apart: `model.layers()`, else ValueError)."""
    parts = model.layers()
    enc = model.encode(text)
    n = len(enc.tokens)
    out = np.empty((len(parts), model.n_heads, n), dtype=np.float32)
    seen: list[int] = []
    owner = threading.get_ident()  # another visitor's pass meanwhile must not write here

    def keep(layer: int, p: LayerParts) -> Callable[[torch.nn.Module, tuple[torch.Tensor, ...], torch.Tensor], None]:
        def hook(_m: torch.nn.Module, _args: tuple[torch.Tensor, ...], v: torch.Tensor) -> None:
            if threading.get_ident() != owner:
                return
            f = _transformed(p, v[0].float())  # (H, n, d)
            out[layer] = torch.linalg.vector_norm(f, dim=-1).cpu().numpy()
            seen.append(layer)

        return hook

    with contextlib.ExitStack() as stack, model.gate.background(), torch.inference_mode():
        for layer, p in enumerate(parts):
            stack.callback(p.value.register_forward_hook(keep(layer, p)).remove)
        model.last_hidden(enc.inputs)
    if sorted(seen) != list(range(len(parts))):
        raise ValueError(f"model '{model.name}' did not run each of its {len(parts)} layers once")
    return out


def moved_share(weights: np.ndarray, norms: np.ndarray, column: int) -> float:
    """The norm-based share (||alpha f||, rows normalised) of `column`, averaged over the rows, for
    one head: `weights` (n, n) its attention, `norms` (n,) its value norms."""
    rows = weights.astype(np.float64) * norms.astype(np.float64)[None, :]
    moved = rows / np.maximum(rows.sum(-1, keepdims=True), np.finfo(np.float64).tiny)
    return float(moved[:, column].mean())
