"""The residual stream a layer's attention reads, taken apart into what wrote it, at the query's
and the key's position, from one recorded forward; float64 throughout.

Pre-norm decoders: x_l = embed + sum_{m<l} (sum_h head_{m,h} + b_O^m + mlp_m), head_{m,h}(i) =
sum_j alpha[h,i,j] f_h(x_j), mlp_m the next layer's input less this one's and the attention output.
Post-LN encoders: with each LayerNorm's scale frozen at its real value on that position,
LN(sum_p v_p) = sum_p gamma * centre(v_p) / s + beta, so every part is carried through each
LayerNorm, beta joins the bias part and FF(mid) enters as a part of its own: the sum stays exact.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..models import Encoded, Runner
from ..models.prenorm_parts import NoFeedForward, PreNormParts
from ..scratch import LayerParts
from .decompose import _centre, _ln_scale, kv_heads, record_layers, transformed
from .prenorm import attention_layers, prenorm_trace
from .rotary import attention_module, keep_projections, keep_tables

BIAS = "bias"


def frozen_norm(norm: nn.Module | None, parts: torch.Tensor, actual: torch.Tensor, bias: int | None) -> torch.Tensor:
    """A normalisation with its scale frozen at the value it had, applied to each part.

    parts (P, m, d) summing to `actual` (m, d) the norm's real input; RMSNorm divides each part
    by the real rms and multiplies by its weight, LayerNorm centres each part, divides by the
    real standard deviation and multiplies by gamma, beta going to part `bias`. The parts of
    the result sum to norm(actual). nn.Identity or None: the parts as they are."""
    if norm is None or isinstance(norm, nn.Identity):
        return parts
    weight = getattr(norm, "weight", None)
    gamma = 1.0 if weight is None else weight.detach().double()
    if isinstance(norm, nn.LayerNorm):
        out = _centre(parts) / _ln_scale(norm, actual) * gamma
        beta = getattr(norm, "bias", None)
        if beta is not None:
            if bias is None:
                raise ValueError("a LayerNorm's beta needs a bias part")
            out[bias] += beta.detach().double()
        return out
    eps = getattr(norm, "variance_epsilon", getattr(norm, "eps", None))
    if eps is None or weight is None:
        raise ValueError(f"{type(norm).__name__} is neither LayerNorm nor RMSNorm: its scale cannot be frozen")
    rms = (actual.square().mean(-1, keepdim=True) + float(eps)).sqrt()
    return parts / rms * gamma


@dataclass
class Stream:
    """The parts of the stream at (query, key): names (P,), parts (P, 2, d) summing to x (2, d)."""

    names: list[str]
    parts: torch.Tensor
    x: torch.Tensor


@dataclass
class LayerReader:
    """How one layer's attention turns the stream into one head's query and key, with the
    model's own recorded projections (q (n, H * hs) and k (n, KV * hs)) to check against."""

    norm: nn.Module | None
    linears: tuple[nn.Linear, nn.Linear]  # the query and key projections
    heads: tuple[int, int]  # the query head and the key/value head it reads
    head_dim: int
    scaling: float
    projected: tuple[torch.Tensor, torch.Tensor]  # the model's own q and k
    alpha: float  # the head's attention weight at (query, key)
    positions: tuple[int, int]  # (query, key) token indices
    head_norms: tuple[nn.Module | None, nn.Module | None] = (None, None)  # Qwen3's per-head RMSNorms on q and k
    rotate: Any = None  # the model's apply_rotary_pos_emb(q, k, cos, sin)
    cos_sin: tuple[torch.Tensor, torch.Tensor] | None = None  # (1, n, hs) each

    def rows(self, side: int) -> slice:
        """The head's rows of the query (side 0) or key (side 1) projection."""
        return slice(self.heads[side] * self.head_dim, (self.heads[side] + 1) * self.head_dim)

    def recorded(self, side: int) -> torch.Tensor:
        """(hs,): the model's own query (side 0) or key (side 1) projection at that side's position."""
        return self.projected[side][self.positions[side], self.rows(side)]


def _head_outputs(alpha: torch.Tensor, f: torch.Tensor, pos: list[int]) -> torch.Tensor:
    """(H, 2, d): sum_j alpha[h, p, j] f_h(x_j) at the two positions."""
    return torch.einsum("hpj,hjd->hpd", alpha[:, pos].double(), f.double())


def _bias_of(linear: nn.Linear, like: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(like) if linear.bias is None else linear.bias.detach().double().expand_as(like)


def _prenorm_stream(
    parts: list[PreNormParts],
    alphas: np.ndarray,
    traces: list[dict[str, torch.Tensor]],
    layer: int,
    pos: list[int],
    mlp: bool,
) -> Stream:
    """The stream entering `layer` in parts, from `prenorm_trace`'s weights and records."""
    x = [t["x"].double()[pos] for t in traces[: layer + 1]]  # each (2, d)
    names, vecs = ["embed"], [x[0]]
    bias = torch.zeros_like(x[0])
    for m in range(layer):
        p, rec = parts[m], traces[m]
        alpha = torch.from_numpy(np.ascontiguousarray(alphas[m])).to(x[0].device)
        heads = _head_outputs(alpha, transformed(p, rec["values"].double()), pos)
        names += [f"L{m}H{h}" for h in range(p.n_heads)]
        vecs += list(heads)
        bias = bias + _bias_of(p.output, x[0])
        if mlp:
            names.append(f"L{m} mlp")
            vecs.append(x[m + 1] - x[m] - rec["attn_out"].double()[pos])
    names.append(BIAS)
    vecs.append(bias)
    return Stream(names, torch.stack(vecs), x[layer])


def _postln_stream(model: Runner, enc: Encoded, layer: int, pos: list[int]) -> tuple[Stream, torch.Tensor]:
    """The stream in parts and the attention weights (H, n, n) of `layer`; the bias part (o_proj's
    biases and the LayerNorms' betas) stays last."""
    records = record_layers(model, enc)
    r = next(records)
    x = r.x.double()[pos]
    names, vecs = ["embed", BIAS], torch.stack([x, torch.zeros_like(x)])
    for m in range(layer):
        p = r.parts
        vecs = torch.cat([vecs[:-1], _head_outputs(r.alpha, r.f, pos), (vecs[-1] + _bias_of(p.output, x))[None]])
        vecs = frozen_norm(p.ln_attention, vecs, r.pre1.double()[pos], -1)
        mlp = (r.pre2 - r.mid).double()[pos]
        vecs = frozen_norm(p.ln_ff, torch.cat([vecs[:-1], mlp[None], vecs[-1:]]), r.pre2.double()[pos], -1)
        names = [*names[:-1], *(f"L{m}H{h}" for h in range(p.n_heads)), f"L{m} mlp", BIAS]
        r = next(records)
    return Stream(names, vecs, r.x.double()[pos]), r.alpha


def record_stream(
    model: Runner, enc: Encoded, layer: int, head: int, query: int, key: int
) -> tuple[Stream, LayerReader]:
    """One recorded forward of `enc`: the stream entering `layer` at (query, key) in parts, and
    how `head` reads it. ValueError for a layout that cannot be taken apart."""
    kind, parts = attention_layers(model)
    p = parts[layer]
    pos = [query, key]
    seen: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        keep_projections(stack, p.query, p.key, seen)
        attn = rotate = None  # the Hugging Face attention module and its rotary function, if any
        if kind == "prenorm":
            if getattr(model, "hf_model", None) is not None:
                attn, rotate = attention_module(model, layer)[1:]
                stack.callback(keep_tables(attn, seen).remove)
            pre = [q for q in parts if isinstance(q, PreNormParts)]
            with model.gate.background(), torch.inference_mode():
                alphas, traces = prenorm_trace(model, enc.inputs, pre)
                stream = _prenorm_stream(pre, alphas, traces, layer, pos, not isinstance(pre[0].mlp, NoFeedForward))
            alpha = float(alphas[layer, head, query, key])
        else:
            with torch.inference_mode():
                stream, weights = _postln_stream(model, enc, layer, pos)
            alpha = float(weights[head, query, key])
    if not {"q", "k"} <= seen.keys():
        raise ValueError(f"model '{model.name}' did not run layer {layer}'s projections")
    scale = p.scale if isinstance(p, LayerParts) else True
    reader = LayerReader(
        norm=p.norm_attention if isinstance(p, PreNormParts) else None, linears=(p.query, p.key),
        heads=(head, kv_heads(p)[head]), head_dim=p.head_dim,
        scaling=float(getattr(attn, "scaling", p.head_dim**-0.5)) if scale else 1.0,
        projected=(seen["q"][0].double(), seen["k"][0].double()), alpha=alpha, positions=(query, key),
        head_norms=(getattr(attn, "q_norm", None), getattr(attn, "k_norm", None)), rotate=rotate,
        cos_sin=seen.get("cos_sin"),
    )  # fmt: skip
    return stream, reader
