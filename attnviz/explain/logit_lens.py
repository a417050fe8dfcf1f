"""The logit lens (nostalgebraist 2020): what a decoder would write next if it stopped after
each layer (the final norm and unembedding applied to each layer's residual stream at one
position; the last row is the model's own prediction)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models import Runner
from ..nextword import top_k


@dataclass(frozen=True)
class LogitLens:
    """tokens[l] the k likeliest next tokens after layer l, best first; probs and ids (layers, k);
    position and token: the token read."""

    tokens: list[list[str]]
    probs: np.ndarray
    ids: np.ndarray
    position: int
    token: str


def logit_lens(model: Runner, text: str, position: int = -1, k: int = 5, max_tokens: int | None = None) -> LogitLens:
    """The k likeliest next tokens after every layer at `position` (default: the last token).
    ValueError for a model without a language-model head (an encoder)."""
    enc, logits = model.residual_logits(text, position, max_tokens)  # (layers, vocab)
    ids, probs = top_k(logits, k)
    pos = position % len(enc.tokens)
    return LogitLens(
        tokens=[model.vocab_strings([int(i) for i in row]) for row in ids],
        probs=probs.astype(np.float32),
        ids=ids,
        position=pos,
        token=enc.tokens[pos],
    )
