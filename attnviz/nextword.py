"""The next word of a causal language model: `predict(model, text, k)`.

Pure numpy over what the Runner returns (`next_token_logits`), so it is cheap to test.
"""

from __future__ import annotations

import numpy as np

from .models import Runner

__all__ = ["predict", "top_k"]


def top_k(logits: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, probabilities) of the k largest softmax entries of each row, best first."""
    if k < 1:
        raise ValueError("k must be at least 1")
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=-1, keepdims=True)
    k = min(int(k), p.shape[-1])
    part = np.argpartition(-p, k - 1, axis=-1)[..., :k]
    order = np.argsort(-np.take_along_axis(p, part, axis=-1), axis=-1, kind="stable")
    ids = np.take_along_axis(part, order, axis=-1)
    return ids, np.take_along_axis(p, ids, axis=-1)


def predict(model: Runner, text: str, k: int = 10, max_tokens: int | None = None) -> list[tuple[str, float]]:
    """The k likeliest tokens after `text`, best first, as (token, probability) pairs.
    ValueError for a model without a language-model head (an encoder)."""
    ids, probs = top_k(model.next_token_logits(text, max_tokens), k)
    return list(zip(model.vocab_strings([int(i) for i in ids]), (float(p) for p in probs), strict=True))
