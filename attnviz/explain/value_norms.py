"""||f_h(x_j)||, the length of what each token's value vector can give through each head
(Kobayashi et al. 2020, §3), from one forward that keeps no attention maps.

`norm_weights` returns the same numbers beside alpha ||f|| (layers, heads, n, n): at 512 tokens
of a 6 x 12 model that is 75 MB more, and with the explorer's own 75 MB result the pair
overflowed the app's 128 MB result cache, which then evicted one for the other on every rerun (two
forwards a rerun). The explorer's sinks caveat needs only the value norms: alpha ||f|| of one
head is its attention row times these (`moved_share`).

`attend_keeping_values` keeps the value vectors of the views' own forward, and `PassValues.norms()`
makes the norms from them when the page asks, after the views are sent (the explorer's 512-token
run then makes one pass, not two)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from ..models.base import LayerParts, Runner
from ..result import Attention
from .norms import _transformed

__all__ = ["PassValues", "attend_keeping_values", "moved_share", "value_norms"]

_Hook = Callable[[torch.nn.Module, tuple[torch.Tensor, ...], torch.Tensor], None]


@dataclass
class PassValues:
    """Each layer's value vectors v = x W_V + b_V (n, heads * head_dim) of one forward pass, kept
    so that the value norms are computed only when first asked for (`norms()`), after the pass's
    attention went to the page: on the explorer's 512-token run that is 25 ms (a fifth of the pass)
    off the path to the first chart. The vectors are dropped once the norms are made."""

    parts: list[LayerParts]
    values: list[np.ndarray]
    _norms: np.ndarray | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def norms(self) -> np.ndarray:
        """(layers, heads, n) float32: ||f_h(x_j)||, output bias excluded (Kobayashi et al. 2020)."""
        with self._lock:
            if self._norms is None:
                with torch.inference_mode():
                    self._norms = np.stack(
                        [_lengths(p, v) for p, v in zip(self.parts, self.values, strict=True)]
                    ).astype(np.float32, copy=False)
                self.values = []
            return self._norms


def _lengths(p: LayerParts, v: np.ndarray) -> np.ndarray:
    """||f_h(x_j)|| (H, n) of one layer from its kept values (n, H * hs), on the device of the
    layer's weights (a model on the GPU kept its values on the CPU)."""
    values = torch.from_numpy(v).to(device=p.output.weight.device, dtype=torch.float32)
    return torch.linalg.vector_norm(_transformed(p, values), dim=-1).cpu().numpy()


def _keeping(parts: list[LayerParts], out: dict[int, np.ndarray]) -> contextlib.ExitStack:
    """Hooks on each layer's value projection that keep v (n, H * hs) of the first text of the
    batch in `out[layer]` (a view of the pass's own tensor on the CPU, not a copy), for passes on
    this thread only (another visitor's pass through the same modules meanwhile must not write
    here). A layer seen twice marks `out[-1]`. Close the stack to remove the hooks."""
    owner = threading.get_ident()

    def keep(layer: int) -> _Hook:
        def hook(_m: torch.nn.Module, _args: tuple[torch.Tensor, ...], v: torch.Tensor) -> None:
            if threading.get_ident() != owner:
                return
            if layer in out:  # a layer run twice: not the one pass these values belong to
                out[-1] = np.empty(0)
            out[layer] = v[0].detach().float().cpu().numpy()

        return hook

    stack = contextlib.ExitStack()
    for layer, p in enumerate(parts):
        stack.callback(p.value.register_forward_hook(keep(layer)).remove)
    return stack


def _complete(parts: list[LayerParts], out: dict[int, np.ndarray], n: int) -> PassValues | None:
    """The pass's values when it ran through each layer once, for `n` tokens; else None."""
    layers = [out.get(layer) for layer in range(len(parts))]
    if -1 in out or any(
        v is None or v.shape != (n, p.n_heads * p.head_dim) for v, p in zip(layers, parts, strict=True)
    ):
        return None
    return PassValues(parts, [v for v in layers if v is not None])


def attend_keeping_values(
    model: Runner, text: str, max_tokens: int | None = None
) -> tuple[Attention, PassValues | None]:
    """`model.attend(text, max_tokens)` and the same pass's value vectors, whose `norms()` equal
    `value_norms(model, model.fit(text, max_tokens))`; None where that pass cannot give them: layers
    that do not come apart (ValueError from `layers()`), or a pass that did not run through them
    once each (the embedded MiniLM loading its full model meanwhile, an accelerator out of memory
    answering from a CPU copy).

    A runner whose `attend` runs through other modules than `layers()` names them in
    `attend_layers()` (the embedded MiniLM's quick encoder, models/minilm_quick.py)."""
    try:
        parts = getattr(model, "attend_layers", model.layers)()
    except ValueError:
        return model.attend(text, max_tokens), None
    out: dict[int, np.ndarray] = {}
    with _keeping(parts, out):
        att = model.attend(text, max_tokens)
    return att, _complete(parts, out, att.n)


def value_norms(model: Runner, text: str) -> np.ndarray:
    """(layers, heads, n) float32: ||f_h(x_j)||, equal to `norm_weights(model, text).value_norms`.

    Works where `norm_weights` does (the layers must come apart: `model.layers()`, else ValueError)."""
    parts = model.layers()
    enc = model.encode(text)
    out: dict[int, np.ndarray] = {}
    with _keeping(parts, out), model.gate.background(), torch.inference_mode():
        model.last_hidden(enc.inputs)
    values = _complete(parts, out, len(enc.tokens))
    if values is None:
        raise ValueError(f"model '{model.name}' did not run each of its {len(parts)} layers once")
    return values.norms()


def moved_share(weights: np.ndarray, norms: np.ndarray, column: int) -> float:
    """The norm-based share (||alpha f||, rows normalised) of `column`, averaged over the rows, for
    one head: `weights` (n, n) its attention, `norms` (n,) its value norms."""
    rows = weights.astype(np.float64) * norms.astype(np.float64)[None, :]
    moved = rows / np.maximum(rows.sum(-1, keepdims=True), np.finfo(np.float64).tiny)
    return float(moved[:, column].mean())
