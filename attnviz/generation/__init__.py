"""Watch a decoder write: `generate(model, prompt, steps)` runs a causal model one token a step
over its KV cache and keeps, for every step, the new token's attention row in every layer and
head, its probability and the likeliest alternatives, and the cache's size; `Generation.branch`
writes another token at a step and goes on from there.

    gen = attnviz.generate(attnviz.load_model("smollm2"), "The capital of France is", steps=10)
    gen.tokens, gen.steps[0].alternatives, gen.steps[0].rows.shape   # (layers, heads, positions)

`Generation` and `Step` (steps.py) are numpy; `generate` (write.py) loads torch on first use."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .limits import MAX_STEPS
from .steps import Generation, Step

if TYPE_CHECKING:
    from .write import generate

__all__ = ["MAX_STEPS", "Generation", "Step", "generate"]


def __getattr__(name: str) -> object:
    # `python -m attnviz generate --help` and a refused argument answer without torch
    if name == "generate":
        value = importlib.import_module(".write", __name__).generate
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
