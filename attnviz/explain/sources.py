"""Why a head looks there: one pre-softmax score taken apart into what wrote the query and the key
(the QK circuit of Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits", read
term by term).

The stream entering `layer` at each position is a sum of parts (residual_parts.py: "embed",
"L3H5", "L3 mlp", "bias"). Each goes through the input norm frozen at its real scale (as
Kobayashi et al. 2021 and ALTI do for LayerNorm), the head's query or key projection (its bias
joins "bias"), Qwen3's per-head norm frozen the same way and the model's own rotary function,
all linear, so q = sum_a q_a, k = sum_b k_b and

    matrix[a, b] = q_a . k_b * scaling,      sum_ab matrix[a, b] = q . k * scaling = the score

One recorded forward keeps every layer's weights (71 MB for SmolLM2 at 256 tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..models import Runner
from .residual_parts import BIAS, LayerReader, frozen_norm, record_stream

SCORE_SOURCES_MAX_TOKENS = 256


@dataclass(frozen=True)
class ScoreSources:
    """One head's score of key token `key` from query token `query`, taken apart (float64)."""

    model: str
    tokens: list[str]
    layer: int
    head: int
    kv_head: int
    query: int
    key: int
    query_parts: list[str]
    key_parts: list[str]
    matrix: np.ndarray  # (len(query_parts), len(key_parts))
    model_score: float  # q . k * scaling from the model's own recorded projections
    weight: float  # the head's attention weight at (query, key) (after the softmax)

    @property
    def score(self) -> float:
        return float(self.matrix.sum())

    @property
    def query_side(self) -> np.ndarray:
        """Each query-side part's contribution: its row of the matrix summed (the whole key)."""
        return self.matrix.sum(1)

    @property
    def key_side(self) -> np.ndarray:
        """Each key-side part's contribution: its column summed (the whole query)."""
        return self.matrix.sum(0)

    def top(self, side: str, k: int = 5) -> list[tuple[str, float, float]]:
        """The k parts of one side ("query" or "key") that move the score most, largest |value|
        first: (name, value, share of the score). Parts may push against each other, so shares
        can be negative or exceed 1."""
        if side not in ("query", "key"):
            raise ValueError("side must be 'query' or 'key'")
        names, values = (self.query_parts, self.query_side) if side == "query" else (self.key_parts, self.key_side)
        order = np.argsort(-np.abs(values), kind="stable")[:k]
        return [(names[i], float(values[i]), self.share(float(values[i]))) for i in order]

    def share(self, value: float) -> float:
        """value / score (NaN for a score of exactly 0)."""
        return value / self.score if self.score != 0 else float("nan")

    def through(self, part: str) -> tuple[float, float, float]:
        """(query side, key side, either side): what of the score passes through `part` (its row,
        its column, and row + column - the cell they share); 0 where a side lacks the part."""
        row = self.matrix[self.query_parts.index(part)].sum() if part in self.query_parts else 0.0
        col = self.matrix[:, self.key_parts.index(part)].sum() if part in self.key_parts else 0.0
        both = 0.0
        if part in self.query_parts and part in self.key_parts:
            both = self.matrix[self.query_parts.index(part), self.key_parts.index(part)]
        return float(row), float(col), float(row + col - both)


def _projected(reader: LayerReader, parts: torch.Tensor, actual: torch.Tensor, side: int, bias: int) -> torch.Tensor:
    """parts (P, d) at one side's position summing to `actual` (d,), through the input norm
    (frozen) and the head's slice of the query (side 0) or key (side 1) projection: (P, hs)."""
    linear, rows = reader.linears[side], reader.rows(side)
    normed = frozen_norm(reader.norm, parts[:, None], actual[None], bias)[:, 0]
    out = normed @ linear.weight.detach().double()[rows].T
    if linear.bias is not None:
        out[bias] += linear.bias.detach().double()[rows]
    return out


def _finished(reader: LayerReader, vecs: torch.Tensor, side: int, bias: int | None) -> torch.Tensor:
    """vecs (P, hs) of one side through the per-head norm (Qwen3; frozen at the model's own
    projection's scale) and the model's own rotary function at that side's position."""
    per_head = reader.head_norms[side]
    if isinstance(per_head, torch.nn.Module):
        vecs = frozen_norm(per_head, vecs[:, None], reader.recorded(side)[None], bias)[:, 0]
    if reader.rotate is None or reader.cos_sin is None:
        return vecs
    pos = reader.positions[side]
    cos, sin = (t[:, pos : pos + 1].double() for t in reader.cos_sin)  # (1, 1, hs)
    t = vecs[None, :, None, :]  # (1, P, 1, hs): batch, heads, positions, head width
    q_rot, k_rot = reader.rotate(t, t, cos, sin)
    return (q_rot if side == 0 else k_rot)[0, :, 0]


@torch.inference_mode()
def score_sources(model: Runner, text: str, layer: int, head: int, query: int, key: int) -> ScoreSources:
    """Head (layer, head)'s pre-softmax score of token `key` from token `query` on `text`, taken
    apart (module docstring), for pre-norm decoders and post-LN encoders. ValueError beyond
    SCORE_SOURCES_MAX_TOKENS or for another layout, IndexError for an index out of range."""
    enc = model.encode(text, SCORE_SOURCES_MAX_TOKENS)
    if enc.truncated:
        raise ValueError(
            f"score_sources reads at most {SCORE_SOURCES_MAX_TOKENS} tokens (one forward keeps every layer's "
            f"attention weights); this text has {enc.n_input_tokens}"
        )
    if not 0 <= layer < model.n_layers or not 0 <= head < model.n_heads:
        raise IndexError(f"layer {layer}, head {head} outside {model.n_layers} layers x {model.n_heads} heads")
    for name, index in (("query", query), ("key", key)):
        if not 0 <= index < len(enc.tokens):
            raise IndexError(f"{name} token {index} out of range 0..{len(enc.tokens) - 1}")
    if getattr(model, "causal", False) and key > query:
        raise ValueError(f"key {key} comes after query {query}: a causal model never scores it")
    stream, reader = record_stream(model, enc, layer, head, query, key)
    bias = stream.names.index(BIAS)
    q, k = (_finished(reader, _projected(reader, stream.parts[:, s], stream.x[s], s, bias), s, bias) for s in (0, 1))
    matrix = (q @ k.T * reader.scaling).cpu().numpy()
    own_q, own_k = (_finished(reader, reader.recorded(s)[None], s, None)[0] for s in (0, 1))  # the model's own
    names = list(stream.names)
    if not matrix[bias].any() and not matrix[:, bias].any():  # no bias anywhere (SmolLM2): no bias part
        matrix = np.delete(np.delete(matrix, bias, 0), bias, 1)
        names.pop(bias)
    return ScoreSources(
        model=model.name, tokens=list(enc.tokens), layer=layer, head=head, kv_head=reader.heads[1], query=query,
        key=key, query_parts=names, key_parts=list(names), matrix=matrix, weight=reader.alpha,
        model_score=float(own_q @ own_k) * reader.scaling,
    )  # fmt: skip
