"""||f_h(x_j)||, the length of what each token's value vector can give through each head
(Kobayashi et al. 2020, §3), from one forward that keeps no attention maps.

`norm_weights` gives the same beside alpha ||f|| (layers, heads, n, n), too large to cache beside
the attention at 512 tokens; the sinks caveat needs only these (`moved_share`).
`attend_keeping_values` keeps the values of the views' own forward for `PassValues.norms()`."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from ..models.base import LayerParts, Runner
from ..result import Attention
from ._model import this_thread
from .decompose import transformed as _transformed


@dataclass
class PassValues:
    """Each layer's value vectors v = x W_V + b_V (n, heads * head_dim) of one forward, kept so
    the norms are made on first ask, off the path to the first chart; dropped once made."""

    parts: list[LayerParts]
    values: list[np.ndarray]
    _norms: np.ndarray | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def norms(self) -> np.ndarray:
        """(layers, heads, n) float32: ||f_h(x_j)||, output bias excluded (Kobayashi et al. 2020)."""
        with self._lock:
            if self._norms is None:
                with torch.inference_mode():
                    self._norms = np.stack([_lengths(p, v) for p, v in zip(self.parts, self.values, strict=True)])
                self.values = []
            return self._norms


def _lengths(p: LayerParts, v: np.ndarray) -> np.ndarray:
    """||f_h(x_j)|| (H, n) float32 of one layer from its kept values (n, H * hs), on the weights' device."""
    values = torch.from_numpy(v).to(device=p.output.weight.device, dtype=torch.float32)
    return torch.linalg.vector_norm(_transformed(p, values), dim=-1).cpu().numpy()


def _keeping(parts: list[LayerParts], out: dict[int, np.ndarray]) -> contextlib.ExitStack:
    """Hooks on each layer's value projection keeping v (n, H * hs) of the batch's first text in
    `out[layer]`, for passes on this thread only (the model is shared). A layer seen twice marks
    `out[-1]`. Close the stack to remove the hooks."""

    def keep(layer: int) -> Callable[..., None]:
        def hook(_m: torch.nn.Module, _args: tuple[torch.Tensor, ...], v: torch.Tensor) -> None:
            if layer in out:  # a layer run twice: not the one pass these values belong to
                out[-1] = np.empty(0)
            out[layer] = v[0].detach().float().cpu().numpy()

        return this_thread(hook)

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
    """`model.attend(text, max_tokens)` and the same pass's value vectors (`norms()` equals
    `value_norms` of the fitted text); None where layers do not come apart or the pass did not
    run through each once. A runner whose `attend` runs other modules names them in
    `attend_layers()`."""
    try:
        parts = getattr(model, "attend_layers", model.layers)()
    except ValueError:
        return model.attend(text, max_tokens), None
    out: dict[int, np.ndarray] = {}
    with _keeping(parts, out):
        att = model.attend(text, max_tokens)
    return att, _complete(parts, out, att.n)


def value_norms(model: Runner, text: str) -> np.ndarray:
    """(layers, heads, n) float32: `norm_weights(model, text).value_norms` (ValueError where the
    layers do not come apart)."""
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
