"""Attention at any length: `attend_long` runs a long text through a model with a
memory-efficient kernel and returns a `LongAttention`, whose rows, tiles, overviews, received
weights and distance profiles are computed exactly, on demand, from the kept queries and keys.

    import attnviz
    model = attnviz.load_model("smollm2")
    long = attnviz.attend_long(model, open("book.txt").read(), max_tokens=8192)
    long.overview(layer=3, head=0)          # (256, 256) block means of the 8192 x 8192 map
    long.rows(3, 0, [100, 5000])            # (2, 8192) exact rows
    long.received(3, 0)                     # (8192,) the weight each token receives
"""

from __future__ import annotations

from ..models.gate import Cancelled
from .attention import LongAttention, block_edges
from .run import Estimate, LongSettings, attend_long, estimate, long_settings, longest, scratch_model

__all__ = [
    "Cancelled",
    "Estimate",
    "LongAttention",
    "LongSettings",
    "attend_long",
    "block_edges",
    "estimate",
    "long_settings",
    "longest",
    "scratch_model",
]
