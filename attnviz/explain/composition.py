"""How heads compose through the residual stream (Elhage et al. 2021, "A Mathematical Framework
for Transformer Circuits", composition scores). Head h scores x_q^T W_QK x_k (W_QK = W_Q^T W_K)
and writes W_OV x (W_OV = W_O^h W_V); an earlier head A writes into what a later head B reads:

    Q-composition   ||W_QK^B^T W_OV^A||_F / (||W_QK^B||_F ||W_OV^A||_F)   A writes B's queries
    K-composition   ||W_QK^B   W_OV^A||_F / (||W_QK^B||_F ||W_OV^A||_F)   A writes B's keys
    V-composition   ||W_OV^B   W_OV^A||_F / (||W_OV^B||_F ||W_OV^A||_F)   A writes B's values

Grouped heads use the key/value head each query head reads. The input norm is folded into W_Q,
W_K, W_V as TransformerLens folds LayerNorm (RMSNorm's weight, or LayerNorm's gamma and
centring); biases and a post-LN encoder's LayerNorms between layers are left out, as in the
paper. Each product has rank <= hs, so its norm is taken on hs x hs factors (`_factors`): about
3 L^2 H^2 hs^2 d / 2 multiply-adds (SmolLM2: 1.3e11), float32 products, float64 norms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..models import Runner
from ..models.prenorm_parts import PreNormParts
from .decompose import kv_heads
from .prenorm import attention_layers
from .sources import ScoreSources

COMPOSITION_KINDS = ("q", "k", "v")
_HEAD = re.compile(r"L\d+H\d+")  # a head's part name in ScoreSources


@dataclass(frozen=True)
class Composition:
    """Composition scores of every head B = (layer, head) with every head A of an earlier layer:
    q, k, v (L, H, L, H) float64 indexed [B layer, B head, A layer, A head], NaN where A's
    layer is not before B's."""

    model: str
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray

    def top(self, layer: int, head: int, kind: str = "k", k: int = 3) -> list[tuple[int, int, float]]:
        """The k earlier heads (layer, head, score) that compose most with head B, by `kind`."""
        if kind not in COMPOSITION_KINDS:
            raise ValueError(f"kind must be one of {', '.join(COMPOSITION_KINDS)}")
        scores = getattr(self, kind)[layer, head, :layer]  # (layer, H)
        order = np.argsort(-scores, axis=None, kind="stable")[:k]
        return [(int(a // scores.shape[1]), int(a % scores.shape[1]), float(scores.flat[a])) for a in order]


def _split(linear: nn.Linear, head_dim: int, norm: nn.Module | None) -> torch.Tensor:
    """(heads, hs, d) float64: a projection's rows per head reading x through `norm`, folded in
    (times RMSNorm's weight or LayerNorm's gamma, and LayerNorm's centring: each row less its mean)."""
    w = linear.weight.detach().double().view(-1, head_dim, linear.weight.shape[-1])
    weight = getattr(norm, "weight", None)
    if weight is not None:
        w = w * weight.detach().double()
    return w - w.mean(-1, keepdim=True) if isinstance(norm, nn.LayerNorm) else w


def _r(w: torch.Tensor) -> torch.Tensor:
    """(H, hs, hs) R with ||w^T M||_F = ||R M||_F for any M: w^T = Q R (reduced QR of (H, d, hs))."""
    return torch.linalg.qr(w.transpose(-1, -2)).R


def _factors(model: Runner) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per layer (left (3, H, hs, d), right (H, d, hs)): with M = left[kind, B] @ right[A],
    ||M||_F = ||W_QK^B^T W_OV^A||_F (q), ||W_QK^B W_OV^A||_F (k), ||W_OV^B W_OV^A||_F (v), since
    ||K^T Q O V||_F = ||R_K Q O R_V^T||_F and so on (R from `_r`; k and v the key/value head
    each query head reads)."""
    out = []
    for p in attention_layers(model)[1]:
        norm = p.norm_attention if isinstance(p, PreNormParts) else None
        kv = kv_heads(p)
        o = p.output.weight.detach().double().view(-1, p.n_heads, p.head_dim).permute(1, 0, 2)  # (H, d, hs)
        q, k, v = (_split(linear, p.head_dim, norm) for linear in (p.query, p.key, p.value))
        k, v = k[kv], v[kv]
        left = torch.stack([_r(k) @ q, _r(q) @ k, _r(o.transpose(-1, -2)) @ v])
        out.append((left, o @ _r(v).transpose(-1, -2)))
    return out


@torch.inference_mode()
def composition(model: Runner) -> Composition:
    """Q-, K- and V-composition scores of every pair of heads from the weights (module docstring).
    ValueError for a model whose layers cannot be read (neither a pre-norm decoder nor a
    post-LN encoder)."""
    factors = _factors(model)
    L, (_, H, hs, d) = len(factors), factors[0][0].shape
    scores = np.full((3, L, H, L, H), np.nan)
    norms = [(left.square().sum((-1, -2)).sqrt(), right.square().sum((-1, -2)).sqrt()) for left, right in factors]
    for b in range(1, L):
        left = factors[b][0].float().reshape(3 * H * hs, d)
        right = torch.cat([factors[a][1] for a in range(b)]).float()  # (b H, d, hs)
        m = (left @ right.permute(1, 0, 2).reshape(d, -1)).view(3, H, hs, b * H, hs)  # one product a layer
        found = m.double().square().sum((2, 4)).sqrt()  # (3, H, b H)
        # ||W_QK^B|| is ||left[q]|| (= ||left[k]||), ||W_OV^B|| is ||left[v]||, ||W_OV^A|| is ||right||
        below = torch.stack([norms[b][0][0], norms[b][0][0], norms[b][0][2]])[:, :, None]  # (3, H, 1)
        above = torch.cat([norms[a][1] for a in range(b)])[None, None]  # (1, 1, b H)
        scores[:, b, :, :b] = (found / (below * above)).view(3, H, b, H).cpu().numpy()
    return Composition(model.name, scores[0], scores[1], scores[2])


def composing_heads(sources: ScoreSources, k: int = 5) -> list[tuple[str, float, float, float]]:
    """The k earlier heads through whose output most of this score passes, on this sentence:
    (part name, query-side share, key-side share, share through either side), largest |either|
    first; shares of the score (`ScoreSources.through` divided by the score)."""
    rows = []
    for name in filter(_HEAD.fullmatch, sources.query_parts):
        q, k_side, either = (sources.share(v) for v in sources.through(name))
        rows.append((name, q, k_side, either))
    rows.sort(key=lambda r: -abs(r[3]) if np.isfinite(r[3]) else 0.0)
    return rows[:k]
