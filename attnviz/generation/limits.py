"""What `generate` accepts, checked without torch (the command line refuses at once)."""

from __future__ import annotations

import math

MAX_STEPS = 128  # a step's rows cost a forward's worth of attention; a class reads tens of tokens
MAX_TYPED_CHARS = 1_000  # a text typed in as a branch's token


def check_arguments(steps: int, temperature: float, top_k: int | None, seed: int) -> None:
    """ValueError for steps outside 1..MAX_STEPS, a temperature that is negative or not a
    number, a top_k below 1, a seed that is not a whole number from 0 to 2**31 - 1."""
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"steps must be a whole number from 1 to {MAX_STEPS}, got {steps!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not math.isfinite(temperature):
        raise ValueError(f"temperature must be a finite number, got {temperature!r}")
    if temperature < 0:
        raise ValueError(f"temperature must be 0 (greedy) or more, got {temperature}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a whole number of at least 1, got {top_k!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise ValueError(f"seed must be a whole number from 0 to {2**31 - 1}, got {seed!r}")
