"""Norm-based weights (Kobayashi et al. 2020, "Attention is Not Only a Weight"): alpha times the
norm of each token's transformed value vector, from one recorded forward."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from ..models import Encoded, Runner
from ..models.prenorm_parts import PreNormParts
from ..result import Attention
from ..scratch import LayerParts
from ._arrays import read_only_view
from .decompose import quadratic_norms, transformed
from .prenorm import is_prenorm, prenorm_trace


@dataclass(frozen=True, eq=False)
class NormWeights:
    """Norm-based weights of one text (Kobayashi et al. 2020, §3).

    per_head:     (layers, heads, n, n) float32, ||alpha[h,i,j] f_h(x_j)|| = alpha[h,i,j] ||f_h(x_j)||.
    value_norms:  (layers, heads, n) float32, ||f_h(x_j)||: how much token j can give at all.
    head_cosines: (layers, n, heads, heads) float32, cosine between f_h(x_j) and f_g(x_j).
    per_layer:    (layers, n, n) float32, || sum_h alpha[h,i,j] f_h(x_j) || (vector sum, then
                  norm), computed on first use; `layer_norms(l)` gives one layer.
    Rows do not sum to 1: the size of what moves is the point.
    """

    tokens: list[str]
    per_head: np.ndarray
    value_norms: np.ndarray
    head_cosines: np.ndarray
    special: np.ndarray
    model: str = ""

    @cached_property
    def per_layer(self) -> np.ndarray:
        return np.stack([self.layer_norms(layer) for layer in range(self.per_head.shape[0])])

    def layer_norms(self, layer: int) -> np.ndarray:
        """|| sum_h alpha[h,i,j] f_h(x_j) || of one layer, (n, n) float32: with p_h = alpha[h,i,j]
        ||f_h(x_j)|| and C_j the heads' cosines at j, the square is p^T C_j p."""
        return quadratic_norms(read_only_view(self.per_head[layer]), read_only_view(self.head_cosines[layer])).numpy()

    def as_attention(self) -> Attention:
        """per_head with each row scaled to sum to 1, as an Attention for the views and rollout."""
        w = self.per_head / np.maximum(self.per_head.sum(-1, keepdims=True), np.finfo(np.float32).tiny)
        return Attention(tokens=self.tokens, weights=w, model=f"{self.model} (norm-based)", special=self.special)


Parts = list[LayerParts | PreNormParts]


def _capture(model: Runner, text: str) -> tuple[Encoded, Parts, np.ndarray, list[dict[str, torch.Tensor]]]:
    """One recorded forward: the encoding, the layers, alpha (L, H, n, n) and, per layer, the
    value projection x W_V + b_V and the output projection's result."""
    decoder = is_prenorm(model)
    pre = model.prenorm_layers() if decoder else []
    # the layers `trace` runs through (`attend_layers`: a runner's quick encoder)
    parts: Parts = [*(pre or getattr(model, "attend_layers", model.layers)())]
    enc = model.encode(text)
    with model.gate.background(), torch.inference_mode():
        alphas, records = prenorm_trace(model, enc.inputs, pre) if decoder else model.trace(enc.inputs)
    return enc, parts, alphas, records


def norm_weights(model: Runner, text: str) -> NormWeights:
    """Norm-based weights ||alpha f(x)|| of every layer and head (Kobayashi et al. 2020), for
    encoders and Llama-family decoders; other layouts raise ValueError."""
    enc, parts, alphas, records = _capture(model, text)
    values = [r["values"] for r in records]
    L, H, n, _ = alphas.shape
    value_norms = np.empty((L, H, n), dtype=np.float32)
    head_cosines = np.empty((L, n, H, H), dtype=np.float32)
    with torch.inference_mode():
        f = torch.empty(H, n, parts[0].output.weight.shape[0], device=values[0].device)
        for layer, (p, v) in enumerate(zip(parts, values, strict=True)):
            f = transformed(p, v.float(), out=f)  # (H, n, d)
            fj = f.transpose(0, 1)  # (n, H, d)
            gram = fj @ fj.transpose(1, 2)  # (n, H, H): <f_h(x_j), f_g(x_j)>
            f_norm = torch.diagonal(gram, dim1=1, dim2=2).sqrt()  # (n, H): ||f_h(x_j)||
            inv = 1 / f_norm.clamp_min(torch.finfo(f.dtype).tiny)
            head_cosines[layer] = (gram * inv[:, :, None] * inv[:, None, :]).cpu().numpy()
            f_norm = f_norm.T.contiguous().cpu()  # (H, n)
            value_norms[layer] = f_norm.numpy()
            # in place, alpha becomes alpha ||f|| = ||alpha f|| (alpha >= 0)
            torch.from_numpy(alphas[layer]).mul_(f_norm[:, None, :])
    return NormWeights(enc.tokens, alphas, value_norms, head_cosines, enc.special, model.name)


def norm_reconstruction(model: Runner, text: str, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """(sum_h sum_j alpha[h,i,j] f_h(x_j) + b_O, what the attention output projection returned),
    both (n, d) float64: equal within float tolerance when the decomposition is exact."""
    _, parts, alphas, records = _capture(model, text)
    p = parts[layer]
    with torch.inference_mode():
        f = transformed(p, records[layer]["values"].double())  # (H, n, d)
        alpha = torch.from_numpy(alphas[layer]).to(f.device).double()  # (H, n, n)
        mixed = (alpha @ f).sum(dim=0)  # (n, d): sum over heads of alpha f
        if p.output.bias is not None:
            mixed = mixed + p.output.bias.double()
        return mixed.cpu().numpy(), records[layer]["attn_out"].double().cpu().numpy()
