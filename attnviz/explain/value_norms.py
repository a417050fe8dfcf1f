"""||f_h(x_j)||, the length of what each token's value vector can give through each head
(Kobayashi et al. 2020, §3), from one forward that keeps no attention maps.

`norm_weights` returns the same numbers beside alpha ||f|| (layers, heads, n, n): at 512 tokens
of a 6 x 12 model that is 75 MB more, and with the explorer's own 75 MB result the pair
overflowed the app's 128 MB result cache, which then evicted one for the other on every rerun (two
forwards a rerun). The explorer's sinks caveat needs only the value norms: alpha ||f|| of one
head is its attention row times these (`moved_share`).

`attend_with_value_norms` gives them from the views' own forward (the explorer's 512-token run
then makes one pass, not two: issue 24.1)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

import numpy as np
import torch

from ..models.base import LayerParts, Runner
from ..result import Attention
from .norms import _transformed

__all__ = ["attend_with_value_norms", "moved_share", "value_norms"]

_Hook = Callable[[torch.nn.Module, tuple[torch.Tensor, ...], torch.Tensor], None]


def _keeping(parts: list[LayerParts], out: dict[int, np.ndarray]) -> contextlib.ExitStack:
    """Hooks on each layer's value projection that write ||f_h(x_j)|| (heads, n) of the first
    text of the batch into `out[layer]`, for passes on this thread only (another visitor's pass
    through the same modules meanwhile must not write here). Close the stack to remove them."""
    owner = threading.get_ident()

    def keep(layer: int, p: LayerParts) -> _Hook:
        def hook(_m: torch.nn.Module, _args: tuple[torch.Tensor, ...], v: torch.Tensor) -> None:
            if threading.get_ident() != owner:
                return
            if layer in out:  # a layer run twice: not the one pass these norms belong to
                out[-1] = np.empty(0)
            f = _transformed(p, v[0].float())  # (H, n, d)
            out[layer] = torch.linalg.vector_norm(f, dim=-1).cpu().numpy()

        return hook

    stack = contextlib.ExitStack()
    for layer, p in enumerate(parts):
        stack.callback(p.value.register_forward_hook(keep(layer, p)).remove)
    return stack


def attend_with_value_norms(
    model: Runner, text: str, max_tokens: int | None = None
) -> tuple[Attention, np.ndarray | None]:
    """`model.attend(text, max_tokens)` and, from the same forward pass, the value norms
    (layers, heads, n) float32 that `value_norms(model, model.fit(text, max_tokens))` gives, or
    None where they cannot come from that pass: layers that do not come apart (ValueError from
    `layers()`), or a pass that did not run through them once each (the embedded MiniLM loading
    its full model meanwhile, an accelerator out of memory answering from a CPU copy).

    A runner whose `attend` runs through other modules than `layers()` names them in
    `attend_layers()` (the embedded MiniLM's quick encoder, models/minilm_quick.py)."""
    try:
        parts = getattr(model, "attend_layers", model.layers)()
    except ValueError:
        return model.attend(text, max_tokens), None
    out: dict[int, np.ndarray] = {}
    with _keeping(parts, out):
        att = model.attend(text, max_tokens)
    layers = [out.get(layer) for layer in range(len(parts))]
    if -1 in out or any(a is None or a.shape != (model.n_heads, att.n) for a in layers):
        return att, None
    return att, np.stack(layers).astype(np.float32, copy=False)  # type: ignore[arg-type]


def value_norms(model: Runner, text: str) -> np.ndarray:
    """(layers, heads, n) float32: ||f_h(x_j)||, equal to `norm_weights(model, text).value_norms`.

    Works where `norm_weights` does (the layers must come apart: `model.layers()`, else ValueError)."""
    parts = model.layers()
    enc = model.encode(text)
    out: dict[int, np.ndarray] = {}
    with _keeping(parts, out), model.gate.background(), torch.inference_mode():
        model.last_hidden(enc.inputs)
    if -1 in out or sorted(out) != list(range(len(parts))):
        raise ValueError(f"model '{model.name}' did not run each of its {len(parts)} layers once")
    return np.stack([out[layer] for layer in range(len(parts))]).astype(np.float32, copy=False)


def moved_share(weights: np.ndarray, norms: np.ndarray, column: int) -> float:
    """The norm-based share (||alpha f||, rows normalised) of `column`, averaged over the rows, for
    one head: `weights` (n, n) its attention, `norms` (n,) its value norms."""
    rows = weights.astype(np.float64) * norms.astype(np.float64)[None, :]
    moved = rows / np.maximum(rows.sum(-1, keepdims=True), np.finfo(np.float64).tiny)
    return float(moved[:, column].mean())
