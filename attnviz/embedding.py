"""`attnviz.embed(model, text)`: the sentence embedding the faithfulness scoreboard scores.

The scoreboard measures how far its output moves when tokens are removed; with no query token
that output is `explain.removal.pool` over the last layer: the mean of the token vectors,
special tokens included (sentence-transformers' mean pooling, which MiniLM and
multilingual-e5-small were trained with). This is that same function on one text, L2-normalised
as those models publish their embeddings (a cosine is unchanged by it). multilingual-e5 expects
a "query: " or "passage: " prefix on the text; this adds none.
"""

from __future__ import annotations

import numpy as np
import torch

from .models import Runner

__all__ = ["embed"]


def embed(model: Runner, text: str, max_tokens: int | None = None) -> np.ndarray:
    """(d,) float32, unit length: the mean of the last layer's token vectors of `text`."""
    from .explain.removal import pool

    enc = model.encode(text, max_tokens)
    with model.gate.interactive(), torch.inference_mode():
        pooled = pool(model.last_hidden(enc.inputs), None)[0]
    v = pooled.float().cpu().numpy()
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)
