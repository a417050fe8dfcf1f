"""What switching heads off gives (explain/ablation.py computes it): one variant, every head
alone, and the pruning curve."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..models import HeadMode
from ..result import Attention

Head = tuple[int, int]
Order = Literal["gradient", "effect", "random"]
# What the output-level number measures: an encoder's mean-pooled sentence embedding (cosine
# distance) or a decoder's next token (drop of its log-probability, nats).
Measure = Literal["embedding", "next_token"]
ORDERS: tuple[Order, ...] = ("gradient", "effect", "random")


@dataclass(frozen=True, eq=False)
class Ablation:
    """The model with `heads` switched off: its attention, and how far its output moved."""

    attention: Attention  # the switched model's weights (layers <= the first switched layer unchanged)
    heads: tuple[Head, ...]
    mode: HeadMode
    token_distance: np.ndarray  # (n,) float64: 1 - cos(h_i, h_i switched) of the final hidden states
    # "embedding": 1 - cos of the pooled sentence embeddings; "next_token": log p - log p
    # switched, nats (negative: the switch made the token likelier).
    effect: float
    measure: Measure = "embedding"
    next_token: str = ""  # "next_token": the model's own first choice after the text, as text

    @property
    def sentence_distance(self) -> float:
        """An encoder's `effect`; ValueError for a decoder, which has no sentence embedding."""
        if self.measure != "embedding":
            raise ValueError("a decoder has no sentence embedding: its effect is the next token's log-probability drop")
        return self.effect


@dataclass(frozen=True, eq=False)
class HeadImportance:
    """Each head switched off alone, and Michel et al.'s gradient estimate beside it.
    `np.asarray(result)` is `effect`, the (layers, heads) array of the public API."""

    effect: np.ndarray  # (L, H) `Ablation.effect` (by `measure`) with only that head off
    token_effect: np.ndarray  # (L, H) mean over tokens of the per-token cosine distance
    gradient: np.ndarray  # (L, H) |dF / d xi_h| at xi = 1 (see the module docstring)
    kendall: float  # rank agreement of effect and gradient over all heads
    spearman: float
    mode: HeadMode
    n_tokens: int
    capped: bool  # the text was cut to `max_tokens` tokens first
    measure: Measure = "embedding"
    next_token: str = ""  # "next_token": the token whose log-probability is measured

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.effect.shape)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return np.array(self.effect, dtype=dtype)

    def ranking(self, order: Order, seed: int = 0) -> list[Head]:
        """Every head, least important first by `order`: "gradient" (Michel et al.'s
        pruning order), "effect" (the real single-head effect) or "random" (the floor)."""
        L, H = self.effect.shape
        if order == "random":
            flat = np.random.default_rng(seed).permutation(L * H)
        elif order in ("gradient", "effect"):
            flat = np.argsort(getattr(self, order).ravel(), kind="stable")
        else:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}")
        return [(int(i) // H, int(i) % H) for i in flat]


@dataclass(frozen=True, eq=False)
class PruningCurve:
    """The output's change with the k least important heads off (Michel et al. 2019, figure 3)."""

    order: Order
    ranking: tuple[Head, ...]  # least important first
    k: np.ndarray  # (m,) int: heads switched off
    distance: np.ndarray  # (m,) `Ablation.effect` by `measure`: sentence distance or next-token drop
    token_distance: np.ndarray  # (m,) mean per-token cosine distance
    measure: Measure = "embedding"
    next_token: str = ""
