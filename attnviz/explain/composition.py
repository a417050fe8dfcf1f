"""How heads compose through the residual stream (Elhage et al. 2021, "A Mathematical Framework
for Transformer Circuits", section "Virtual Attention Heads" / composition scores).

With column vectors, head h's score is x_q^T W_QK x_k (W_QK = W_Q^T W_K, d x d) and its output
W_OV x (W_OV = W_O^h W_V, d x d). An earlier head A writes W_OV^A x into the stream that a
later head B reads; the three ways it can matter, each a number in [0, 1]:

    Q-composition   ||W_QK^B^T W_OV^A||_F / (||W_QK^B||_F ||W_OV^A||_F)   A writes B's queries
    K-composition   ||W_QK^B   W_OV^A||_F / (||W_QK^B||_F ||W_OV^A||_F)   A writes B's keys
    V-composition   ||W_OV^B   W_OV^A||_F / (||W_OV^B||_F ||W_OV^A||_F)   A writes B's values

With grouped heads W_K and W_V are the key/value head the query head reads. The norm each head
reads through is folded into its W_Q, W_K, W_V as TransformerLens folds LayerNorm: RMSNorm's
weight, or LayerNorm's gamma and its centring (W diag(gamma) (I - 11^T / d)); biases and the
LayerNorms between a post-LN encoder's layers are left out, as in the paper.

Each product has rank <= the head width hs, so its norm is that of an hs x hs matrix:
||K^T Q O V||_F = ||R_K Q O R_V^T||_F with K^T = Q_K R_K and V^T = Q_V R_V (QR), and the
products for every earlier head are one matrix product a layer, in float32 (norms in float64).
Cost: about 3 L^2 H^2 hs^2 d / 2 multiply-adds (SmolLM2: 1.3e11).

On a sentence, `composing_heads` reads the same link off `score_sources`: the share of B's score
that passes through A's output on the query side, the key side, or either.
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
from .residual_parts import attention_layers
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


@dataclass(frozen=True)
class _Heads:
    """One layer's per-head weights, float64, the input norm folded in: q (H, hs, d), k and v
    (H, hs, d) (the key/value head each query head reads), o (H, d, hs)."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    o: torch.Tensor


def _folded(w: torch.Tensor, norm: nn.Module | None) -> torch.Tensor:
    """w (..., d) reading x through `norm`: times RMSNorm's weight or LayerNorm's gamma, and
    LayerNorm's centring (each row less its mean)."""
    if norm is None or isinstance(norm, nn.Identity):
        return w
    weight = getattr(norm, "weight", None)
    if weight is not None:
        w = w * weight.detach().double()
    return w - w.mean(-1, keepdim=True) if isinstance(norm, nn.LayerNorm) else w


def _split(linear: nn.Linear, head_dim: int, norm: nn.Module | None) -> torch.Tensor:
    """(heads, hs, d): a projection's rows per head, reading through `norm` (folded in)."""
    w = linear.weight.detach().double()
    return _folded(w.view(-1, head_dim, w.shape[-1]), norm)


def _layer_heads(model: Runner) -> list[_Heads]:
    _, parts = attention_layers(model)
    out = []
    for p in parts:
        norm = p.norm_attention if isinstance(p, PreNormParts) else None
        kv = kv_heads(p)
        o = p.output.weight.detach().double().view(-1, p.n_heads, p.head_dim).permute(1, 0, 2)  # (H, d, hs)
        q, k, v = (_split(linear, p.head_dim, norm) for linear in (p.query, p.key, p.value))
        out.append(_Heads(q, k[kv], v[kv], o))
    return out


def _r(w: torch.Tensor) -> torch.Tensor:
    """(H, hs, hs) R with ||w^T M||_F = ||R M||_F for any M: w^T = Q R (reduced QR of (H, d, hs))."""
    return torch.linalg.qr(w.transpose(-1, -2)).R


def _factors(h: _Heads) -> tuple[torch.Tensor, torch.Tensor]:
    """(left (3, H, hs, d), right (H, d, hs)) of one layer: with M = left[kind, B] @ right[A],
    ||M||_F = ||W_QK^B^T W_OV^A||_F (q), ||W_QK^B W_OV^A||_F (k), ||W_OV^B W_OV^A||_F (v), since
    ||K^T Q O V||_F = ||R_K Q O R_V^T||_F and so on (R from `_r`)."""
    left = torch.stack([_r(h.k) @ h.q, _r(h.q) @ h.k, _r(h.o.transpose(-1, -2)) @ h.v])
    return left, h.o @ _r(h.v).transpose(-1, -2)


@torch.inference_mode()
def composition(model: Runner) -> Composition:
    """Q-, K- and V-composition scores of every pair of heads from the weights (module docstring).
    ValueError for a model whose layers cannot be read (neither a pre-norm decoder nor a
    post-LN encoder)."""
    factors = [_factors(h) for h in _layer_heads(model)]
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
