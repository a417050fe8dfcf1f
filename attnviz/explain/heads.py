"""Head statistics (Clark et al. 2019, "What Does BERT Look At?", §3) and sink shares.
Numpy only: takes an `Attention`."""

from __future__ import annotations

import math
import unicodedata
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..result import Attention
from ._arrays import read_only_view

if TYPE_CHECKING:
    from .norms import NormWeights

ENTROPY_SMOOTHING = 1e-6  # A' = (A + eps) / (1 + n eps): log 0 never happens, one-hot rows give ~0
LABEL_SHARE = 0.5  # a head is "previous token", "[SEP] sink", ... when over half its attention goes there
BROAD_ENTROPY = 0.8  # "broad" when the mean row entropy exceeds this fraction of ln n


def _is_punctuation(token: str) -> bool:
    return bool(token) and all(unicodedata.category(c).startswith("P") for c in token)


def _token_groups(att: Attention) -> dict[str, np.ndarray]:
    """Column indices of [CLS] (the first special token), [SEP] (the other special tokens)
    and punctuation (ordinary tokens made only of punctuation characters)."""
    specials = np.flatnonzero(att.special)
    punct = [i for i, t in enumerate(att.tokens) if not att.special[i] and _is_punctuation(t)]
    return {"cls": specials[:1], "sep": specials[1:], "punct": np.array(punct, dtype=int)}


def head_stats(att: Attention) -> dict[str, np.ndarray]:
    """Per (layer, head), averaged over query rows: "entropy" (nats), "entropy_rel" (entropy
    / ln n), shares of attention to "cls", "sep", "punct", "self", "prev" (A[i, i-1], rows
    i >= 1) and "next" (A[i, i+1], rows i < n-1). Each value is a (layers, heads) float64 array.
    """
    att.require_square("head statistics")
    w = read_only_view(att.weights)  # (L, H, n, n)
    n = att.n
    with torch.inference_mode():
        entropy, received = _per_head_pass(w)  # (L, H), (L, H, n)
        zeros = np.zeros_like(entropy)
        stats = {"entropy": entropy, "entropy_rel": entropy / math.log(n) if n > 1 else zeros}
        for name, offset in (("self", 0), ("prev", -1), ("next", 1)):
            diag = torch.diagonal(w, offset=offset, dim1=-2, dim2=-1)  # A[i, i + offset], (L, H, n - |offset|)
            stats[name] = diag.mean(-1).double().numpy() if diag.shape[-1] else zeros
    for name, cols in _token_groups(att).items():
        stats[name] = received[..., cols].sum(-1)  # (L, H): mean over rows of the mass on cols
    return stats


def _per_head_pass(w: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """One pass over each (n, n) map of w (L, H, n, n) while it sits in cache: the mean row
    entropy (L, H) and the mean attention each column receives (L, H, n). With p = c (A + eps),
    c = 1 / (1 + n eps): sum_ij p log p = n log c + c sum_ij q log q, q = A + eps."""
    L, H, n, _ = w.shape
    eps = ENTROPY_SMOOTHING
    c = 1.0 / (1.0 + n * eps)
    q = torch.empty(n * n, dtype=torch.float32)
    log_q = torch.empty_like(q)
    entropy = np.empty((L, H))
    received = torch.empty(L, H, n)
    ones = torch.ones(n)
    for layer in range(L):
        for head in range(H):
            a = w[layer, head]  # (n, n)
            torch.add(a.reshape(-1), eps, out=q)
            torch.log(q, out=log_q)
            entropy[layer, head] = -(math.log(c) + c * float(torch.dot(q, log_q)) / n)
            torch.mv(a.T, ones, out=received[layer, head])  # column sums (a BLAS call: 10x a sum)
    return entropy, received.double().numpy() / n


# A head's kind by identifier, with English words for scripts; the app's are catalogue "stats.l_<kind>".
HEAD_KINDS = {
    "prev": "previous token",
    "next": "next token",
    "self": "self",
    "cls": "[CLS] sink",
    "sep": "[SEP] sink",
    "punct": "punctuation",
    "broad": "broad",
}
_PATTERNS = ("prev", "next", "self", "cls", "sep", "punct")


def head_kinds(stats: dict[str, np.ndarray]) -> np.ndarray:
    """A Clark et al.-style kind per head, (layers, heads) of identifiers (keys of HEAD_KINDS):
    the pattern with the largest share if it exceeds LABEL_SHARE, else "broad" if entropy_rel >
    BROAD_ENTROPY, else ""."""
    shares = np.stack([stats[k] for k in _PATTERNS])  # (6, L, H)
    broad = np.where(stats["entropy_rel"] > BROAD_ENTROPY, "broad", "")
    return np.where(shares.max(0) > LABEL_SHARE, np.array(_PATTERNS)[shares.argmax(0)], broad)


def head_labels(stats: dict[str, np.ndarray]) -> np.ndarray:
    """`head_kinds` in English words ("previous token", "[SEP] sink", "broad", ""), (layers, heads)."""
    return np.vectorize(lambda kind: HEAD_KINDS.get(kind, kind), otypes=[str])(head_kinds(stats))


def sink_shares(att: Attention, norms: NormWeights | None = None) -> dict[str, dict[str, float]]:
    """Mean share of attention (and of the norm-based weight) on [CLS], [SEP] and punctuation:
    {"attention": {"[CLS]": .., "[SEP]": .., "punctuation": ..}, "norm": {...}}. The norm-based
    shares are far smaller (Kobayashi et al. 2020)."""
    groups = _token_groups(att)
    names = {"cls": "[CLS]", "sep": "[SEP]", "punct": "punctuation"}

    def shares(w: np.ndarray) -> dict[str, float]:
        w = w / np.maximum(w.sum(-1, keepdims=True), np.finfo(np.float32).tiny)  # rows sum to 1
        return {names[k]: float(w[..., cols].sum(-1).mean()) for k, cols in groups.items()}

    out = {"attention": shares(att.weights)}
    if norms is not None:
        if norms.per_head.shape != att.weights.shape:
            raise ValueError(f"norm weights {norms.per_head.shape} do not match attention {att.weights.shape}")
        out["norm"] = shares(norms.per_head)
    return out
