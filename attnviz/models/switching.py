"""Switching attention heads off (Michel et al. 2019), for every runner: which heads, checked;
the hook on a layer's output projection that changes the heads' slices for one thread only
(the trained decoder's too: training/runner.py goes through RunnerBase.switch_heads)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, Literal

import torch

from ..scratch import LayerParts
from .prenorm_parts import PreNormParts

HeadMode = Literal["zero", "mean"]


def heads_by_layer(heads: Iterable[tuple[int, int]], n_layers: int, n_heads: int, mode: str) -> dict[int, list[int]]:
    """{layer: [heads]} of the listed (layer, head) pairs, checked against a model's size
    (IndexError) and `mode` ("zero" or "mean", ValueError): what every switch_heads takes."""
    if mode not in ("zero", "mean"):
        raise ValueError("mode must be 'zero' or 'mean'")
    off: dict[int, list[int]] = {}
    for layer, head in heads:
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise IndexError(f"head ({layer}, {head}) outside {n_layers} layers x {n_heads} heads")
        off.setdefault(int(layer), []).append(int(head))
    return off


def projection_parts(runner: Any) -> list[LayerParts | PreNormParts]:
    """The layers whose output projection takes the heads side by side: a post-LN encoder's
    `layers()`, else a pre-norm decoder's `prenorm_layers()` (its o_proj; with grouped heads the
    input still holds one slice per query head). ValueError when the runner has neither."""
    try:
        return list(runner.layers())
    except ValueError as not_an_encoder:
        try:
            return list(runner.prenorm_layers())
        except ValueError:
            raise not_an_encoder from None


def head_switch(
    p: LayerParts | PreNormParts, heads: list[int], mode: HeadMode, gate: torch.Tensor | None
) -> Callable[[torch.nn.Module, tuple[torch.Tensor, ...]], tuple[torch.Tensor, ...] | None]:
    """A forward pre-hook on layer p's output projection that switches `heads` off (or scales
    every head by `gate`), for the calling thread only."""
    hs = p.head_dim
    owner = threading.get_ident()  # not threads.this_thread: this hook's value is the changed input

    def hook(_module: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...] | None:
        if threading.get_ident() != owner:
            return None  # another thread's forward: the model as it is
        context = args[0]  # (B, n, nh*hs)
        B, n, _ = context.shape
        split = context.view(B, n, p.n_heads, hs)  # (B, n, nh, hs)
        if gate is not None:  # (H,) or (B, H) -> broadcast over positions and head dims
            g = gate.to(split.dtype)
            g = g.reshape(*g.shape[:-1], 1, p.n_heads, 1)
            split = split * g if mode == "zero" else split + (g - 1) * (split - split.mean(dim=1, keepdim=True))
        if heads:  # zeroed, or their mean over positions
            split = split if gate is not None else split.clone()
            off = split[:, :, heads]
            split[:, :, heads] = 0.0 if mode == "zero" else off.mean(dim=1, keepdim=True).expand_as(off)
        return (split.reshape(B, n, p.n_heads * hs), *args[1:])

    return hook
