"""What `generate` returns: a `Generation` (the sequence, its steps) and its `Step`s. numpy only;
the model and its KV cache stay with the writer behind `attention()` and `branch()`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from ..result import Attention


@dataclass(frozen=True, eq=False)
class Step:
    """One written token.

    token:        the vocabulary entry, as `attnviz.predict` names it (" Paris"; a byte piece as
                  "<0xE4><0xBB>"); token_id its id.
    probability:  the model's softmax probability of it (before temperature and top-k).
    alternatives: the five likeliest tokens there, best first, with their probabilities (the
                  chosen one among them when it is one of the five); alternative_ids their ids.
    rows:         float32 (layers, heads, positions): the new token's attention over every
                  position so far, itself the last.
    cache_bytes:  the KV cache after the step: layers x key/value heads x head dimension x 2
                  (keys, values) x bytes a value x positions; cache_bytes_ungrouped with one
                  key/value head per query head.
    seconds:      the step's time (choosing the token and running it through the model).
    forced:       True when `Generation.branch` chose the token, not the model.
    """

    token: str
    token_id: int
    probability: float
    alternatives: list[tuple[str, float]]
    rows: np.ndarray
    cache_bytes: int
    cache_bytes_ungrouped: int
    seconds: float
    alternative_ids: tuple[int, ...]
    forced: bool = False

    @property
    def position(self) -> int:
        """The token's place in the whole sequence (0-based)."""
        return int(self.rows.shape[-1]) - 1


class Writer(Protocol):
    def attention(self) -> Attention: ...

    def branch(self, gen: Generation, step: int, token: str | int) -> Generation: ...


@dataclass(frozen=True, eq=False)
class Generation:
    """A prompt and what the model wrote after it, token by token.

    tokens:  display tokens of the whole sequence, prompt first (as `attention().tokens`).
    ids:     their token ids; n_prompt of them are the prompt's.
    steps:   one `Step` a written token.
    text:    the whole sequence's text; prompt the prompt's.
    """

    model: str
    prompt: str
    text: str
    ids: tuple[int, ...]
    n_prompt: int
    tokens: list[str]
    steps: list[Step]
    temperature: float = 0.0
    top_k: int | None = None
    seed: int = 0
    kv_heads: np.ndarray | None = None
    writer: Writer | None = field(default=None, repr=False)

    @property
    def written(self) -> str:
        """The text after the prompt."""
        return self.text[len(self.prompt) :]

    def attention(self) -> Attention:
        """The whole sequence's causal attention, one forward as the runner's `attend` runs it."""
        return self._writer().attention()

    def branch(self, step: int, token: str | int) -> Generation:
        """A new generation that writes `token` at step `step` instead, then goes on as this one
        would (same temperature, top_k and seed) to as many steps as this one has (more when
        the token is a typed text of several tokens). `token`: one of the step's alternatives,
        any text (its tokens are written one a step), or a token id. The KV cache up to that
        step is reused, not recomputed; this generation stays as it is."""
        return self._writer().branch(self, step, token)

    def _writer(self) -> Writer:
        if self.writer is None:
            raise ValueError("this generation was read back without its model: it cannot branch or attend")
        return self.writer

    def summary(self) -> dict[str, Any]:
        """The steps without their rows, as JSON types (the command line's --json, which adds
        the prompt as "text")."""
        head = ("model", "written", "tokens", "n_prompt", "temperature", "top_k", "seed")
        kept = ("token", "token_id", "probability", "alternatives", "cache_bytes", "cache_bytes_ungrouped", "seconds")
        return {
            **{name: getattr(self, name) for name in head},
            "steps": [
                {"position": s.position, **{name: getattr(s, name) for name in kept}, "forced": s.forced}
                for s in self.steps
            ],
        }
