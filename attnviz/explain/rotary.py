"""Rotary positions on the visitor's own sentence (Su et al. 2021): a head scores query i against
key j as (R_i q_i) . (R_j k_j) = q_i . R_(j-i) k_j, so only the distance is left. One real forward
records a layer's queries, keys and cos/sin tables, rotates them with the model's own rotary
function and averages q_i . k_j * scaling over the pairs the same distance apart (j <= i); the
same pairs unrotated show what the positions add. The first token, a sink (Xiao et al. 2024), is
left out by default. The one place explain/ reaches past the Runner: `hf_model.layers[l].self_attn`
(found with getattr; any other runner gets a ValueError).
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..models import Runner
from ._model import this_thread


@dataclass(frozen=True)
class RotaryProfile:
    """One head's pre-softmax score by distance on one sentence: distances, mean, unrotated and
    count (m,) by distance; scores (n, n), NaN above the diagonal."""

    layer: int
    head: int
    kv_head: int
    tokens: list[str]
    distances: np.ndarray
    mean: np.ndarray
    unrotated: np.ndarray
    count: np.ndarray
    scores: np.ndarray
    skip_first: bool


def attention_module(model: Runner, layer: int) -> tuple[Any, Any, Any]:
    """(the Hugging Face base model, its attention module at `layer`, its rotary function)."""
    hf = getattr(model, "hf_model", None)
    blocks = getattr(hf, "layers", None)
    if blocks is None or not 0 <= layer < len(blocks):
        raise ValueError(f"model '{model.name}' has no rotary positions to show (no decoder layer {layer})")
    attn = getattr(blocks[layer], "self_attn", None)
    rotate = getattr(sys.modules.get(type(attn).__module__), "apply_rotary_pos_emb", None)
    if attn is None or rotate is None or not all(hasattr(attn, p) for p in ("q_proj", "k_proj", "head_dim")):
        raise ValueError(f"model '{model.name}' has no rotary positions to show")
    return hf, attn, rotate


def rotary_scores(
    model: Runner, text: str, layer: int, max_tokens: int | None = None
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(tokens, rotated, unrotated): every query head's pre-softmax scores (H, n, n) float64 at
    `layer`, NaN above the diagonal. ValueError for a model without rotary positions."""
    hf, attn, rotate = attention_module(model, layer)
    enc = model.encode(text, max_tokens)
    seen: dict[str, Any] = {}
    with model.gate.interactive(), torch.inference_mode(), contextlib.ExitStack() as stack:
        stack.callback(keep_tables(attn, seen).remove)
        keep_projections(stack, attn.q_proj, attn.k_proj, seen)
        hf(**enc.inputs, return_dict=True)
        if not {"q", "k"} <= seen.keys() or seen.get("cos_sin") is None:
            raise ValueError(f"model '{model.name}' has no rotary positions to show")
        q, k = (_heads(attn, seen[p], p) for p in ("q", "k"))  # (1, H, n, d), (1, KV, n, d)
        q_rot, k_rot = rotate(q, k, *seen["cos_sin"])  # the (cos, sin) tables
        scaling = float(getattr(attn, "scaling", attn.head_dim**-0.5))
        return list(enc.tokens), _scores(q_rot[0], k_rot[0], scaling), _scores(q[0], k[0], scaling)


def keep_tables(attn: Any, seen: dict[str, Any]) -> torch.utils.hooks.RemovableHandle:
    """A pre-hook on the attention module keeping the (cos, sin) tables it is given (each
    (1, n, head_dim)) as seen["cos_sin"], for passes on the calling thread only."""

    def tables(_m: torch.nn.Module, _args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        seen["cos_sin"] = kwargs.get("position_embeddings")

    return attn.register_forward_pre_hook(this_thread(tables), with_kwargs=True)


def keep_projections(
    stack: contextlib.ExitStack, query: torch.nn.Module, key: torch.nn.Module, seen: dict[str, Any]
) -> None:
    """Keep the first q and k projections (1, n, width) that this thread's pass computes as
    seen["q"] and seen["k"]; closing the stack removes the hooks."""
    for name, module in (("q", query), ("k", key)):
        keep = this_thread(lambda _m, _args, out, name=name: seen.setdefault(name, out))
        stack.callback(module.register_forward_hook(keep).remove)


def _heads(attn: Any, projected: torch.Tensor, which: str) -> torch.Tensor:
    """(1, n, heads * d) -> (1, heads, n, d), through the module's per-head norm if it has one
    (Qwen3 and Gemma 3 normalise queries and keys before the rotation)."""
    x = projected.view(*projected.shape[:-1], -1, attn.head_dim)
    norm = getattr(attn, f"{which}_norm", None)
    if isinstance(norm, torch.nn.Module):
        x = norm(x)
    return x.transpose(1, 2)


def _scores(q: torch.Tensor, k: torch.Tensor, scaling: float) -> np.ndarray:
    """(H, n, d) queries and (KV, n, d) keys -> (H, n, n) float64 scores, query head h reading
    key head h // (H / KV) (transformers' repeat_kv), NaN above the diagonal."""
    k = k.repeat_interleave(q.shape[0] // k.shape[0], dim=0)
    s = (q.double() @ k.double().transpose(-1, -2) * scaling).cpu().numpy()
    n = s.shape[-1]
    s[:, np.triu(np.ones((n, n), dtype=bool), 1)] = np.nan
    return s


def by_distance(scores: np.ndarray, skip_first: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distances, mean, count) of an (n, n) causal score matrix: mean over the pairs (i, i - d)
    for each distance d; without the first token as key when `skip_first`."""
    n = scores.shape[-1]
    first = 1 if skip_first and n > 1 else 0
    distances = np.arange(n - first)
    mean = np.array([np.diagonal(scores, -d)[first:].mean() for d in distances])
    count = np.array([n - d - first for d in distances])
    return distances, mean, count


def rotary_distance(
    model: Runner, text: str, layer: int, head: int, *, skip_first: bool = True, max_tokens: int | None = None
) -> RotaryProfile:
    """One head's mean pre-softmax score by distance on `text` (see the module's docstring)."""
    if not 0 <= head < model.n_heads:
        raise IndexError(f"head {head} outside 0..{model.n_heads - 1}")
    tokens, rotated, plain = rotary_scores(model, text, layer, max_tokens)
    distances, mean, count = by_distance(rotated[head], skip_first)
    kv = getattr(model, "kv_heads", None)
    return RotaryProfile(
        layer=layer,
        head=head,
        kv_head=int(kv[head]) if kv is not None else head,
        tokens=tokens,
        distances=distances,
        mean=mean,
        unrotated=by_distance(plain[head], skip_first)[1],
        count=count,
        scores=rotated[head],
        skip_first=skip_first,
    )
