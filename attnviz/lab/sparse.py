"""Sparse attention patterns (`sparse_mask`): which keys each query may look at; `sparse_count`
the entries kept, from the formula, not the mask.

Longformer (Beltagy et al. 2020) combines a sliding window, dilated windows and a few global
tokens; BigBird (Zaheer et al. 2020) adds random keys. Each keeps O(n) of the n^2 entries. Every
row keeps its diagonal, so no row is empty and the softmax over allowed entries is defined.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

    from ..scratch import ScratchEncoder

KINDS = ("window", "global", "dilated", "bigbird")
MAX_N = 4096  # a pattern bigger than this is not drawn or built here (16 M booleans)


def _check(n: int, kind: str, window: int, global_tokens: int, dilation: int, random_keys: int) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown sparse pattern {kind!r}: choose one of {', '.join(KINDS)}")
    for name, value, lo in (("n", n, 1), ("window", window, 0), ("global_tokens", global_tokens, 0),
                            ("dilation", dilation, 1), ("random_keys", random_keys, 0)):  # fmt: skip
        if not isinstance(value, int) or isinstance(value, bool) or value < lo:
            raise ValueError(f"{name} must be a whole number >= {lo}, got {value!r}")
    if n > MAX_N:
        raise ValueError(f"n must be at most {MAX_N:,}, got {n:,}")


def _window(n: int, window: int, dilation: int = 1) -> np.ndarray:
    offset = np.arange(n)[:, None] - np.arange(n)[None, :]  # i - j
    return (np.abs(offset) <= window * dilation) & (offset % dilation == 0)


def sparse_mask(
    n: int,
    kind: str,
    *,
    window: int = 3,
    global_tokens: int = 1,
    dilation: int = 2,
    random_keys: int = 2,
    seed: int = 0,
    causal: bool = False,
) -> np.ndarray:
    """(n, n) bool, True where query i may look at key j.

    window   |i - j| <= window
    global   i < global_tokens or j < global_tokens, and the diagonal
    dilated  i - j = k * dilation for |k| <= window (a window with gaps)
    bigbird  window | global | `random_keys` random keys a row among the rest (seeded)
    `causal`: only j <= i (the random keys are drawn among those). ValueError for bad arguments."""
    _check(n, kind, window, global_tokens, dilation, random_keys)
    lower = np.tril(np.ones((n, n), dtype=bool)) if causal else np.ones((n, n), dtype=bool)
    g = np.arange(n) < global_tokens
    if kind in ("window", "dilated"):
        allowed = _window(n, window, dilation if kind == "dilated" else 1)
    else:
        allowed = g[:, None] | g[None, :] | np.eye(n, dtype=bool)
        if kind == "bigbird":
            allowed |= _window(n, window)
    allowed &= lower
    if kind == "bigbird" and random_keys:
        rng = np.random.default_rng([seed, n, 22])
        for i in range(n):
            free = np.flatnonzero(~allowed[i] & lower[i])
            if len(free):
                allowed[i, rng.choice(free, size=min(random_keys, len(free)), replace=False)] = True
    return allowed


def row_counts(
    n: int,
    kind: str,
    *,
    window: int = 3,
    global_tokens: int = 1,
    dilation: int = 2,
    random_keys: int = 2,
    causal: bool = False,
) -> np.ndarray:
    """(n,) entries each row keeps, by arithmetic on the row index (no n x n matrix)."""
    _check(n, kind, window, global_tokens, dilation, random_keys)
    i = np.arange(n)
    visible = i + 1 if causal else np.full(n, n)  # keys a row may see at all
    step = dilation if kind == "dilated" else 1
    before = np.minimum(i // step, window)  # window keys left of i
    after = 0 if causal else np.minimum((n - 1 - i) // step, window)
    win = before + after + 1  # the diagonal included
    if kind in ("window", "dilated"):
        return win
    g = min(global_tokens, n)
    if kind == "global":
        # a global row sees every visible key; another sees the global keys before it and itself
        return np.where(i < g, visible, np.minimum(g, visible) + (i >= g))
    # bigbird: the window, plus global keys left of the window, then random keys among the rest
    left_globals = np.clip(np.minimum(g, i - window), 0, None)  # global j < i - window
    right_globals = 0 if causal else np.clip(g - (i + window + 1), 0, None)  # global j > i + window
    det = np.where(i < g, visible, win + left_globals + right_globals)
    return det + np.minimum(random_keys, visible - det)


def sparse_count(n: int, kind: str, **options: int | bool) -> int:
    """Entries the pattern keeps (of n^2; n(n+1)/2 with causal), from `row_counts`."""
    return int(row_counts(n, kind, **options).sum())  # type: ignore[arg-type]


def additive_mask(allowed: np.ndarray | torch.Tensor) -> torch.Tensor:
    """The additive float32 mask `scratch.scaled_dot_product_attention` takes: 0 where allowed,
    float32's most negative finite value where not (a weight of exactly 0)."""
    import torch

    keep = torch.as_tensor(np.asarray(allowed, dtype=bool))
    return torch.zeros(keep.shape, dtype=torch.float32).masked_fill(~keep, torch.finfo(torch.float32).min)


def encoder_maps(encoder: ScratchEncoder, input_ids: torch.Tensor, allowed: np.ndarray) -> np.ndarray:
    """The from-scratch encoder's maps (L, H, n, n) for input (1, n), every layer under `allowed`."""
    import torch

    from ..scratch import post_ln_layer

    keep = torch.as_tensor(np.asarray(allowed, dtype=bool))
    maps = []
    with torch.inference_mode():
        x = encoder.embed(input_ids)
        for layer in encoder.layers:
            x, weights = post_ln_layer(replace(layer.parts(), allowed=keep), x)  # type: ignore[operator]
            maps.append(weights[0])
    return torch.stack(maps).float().numpy()
