"""What the explanation methods that run a model share: batches through the background lane
(one batch at a time process-wide, interactive passes first, progress and cancelling between
batches), gradients on demand, and input checks. Models are seen only through the Runner seam."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

import torch

from ..models import Progress, Runner

__all__ = ["batch_size", "check_query", "expand", "in_batches", "with_gradients"]

_P = ParamSpec("_P")
_T = TypeVar("_T")

# One batched forward of an explanation holds at most this many float32 attention entries
# (batch x heads x n x n) and this many tokens (batch x n): n variants or steps go through in
# chunks. The token bound keeps the rest of the activations (hidden states of every layer, the
# feed-forward's 4d-wide middle) and the time small at short inputs too: without it, 170
# variants of a 128-token text ran at once, 0.9 GB above the model and 4 s that an interactive
# pass waited (bench/bench_browser.py, Explain). Both bounds give about 8 forward passes of 512
# tokens, or 32 of 128: under a second on 2 cores, the longest an interactive pass waits.
BATCH_BUDGET = 2**25
TOKEN_BUDGET = 2**11


def batch_size(model: Runner, n: int, grad: bool) -> int:
    scale = 4 if grad else 1  # the backward keeps every activation
    return max(1, min(BATCH_BUDGET // (model.n_heads * n * n * scale), TOKEN_BUDGET // (n * scale)))


def in_batches(
    model: Runner,
    total: int,
    n: int,
    *,
    grad: bool = False,
    progress: Progress | None = None,
    most: int | None = None,
) -> Iterator[slice]:
    """Slices of range(total) sized for n-token inputs (and at most `most` long); the loop
    body of each runs inside the background lane. `progress(done_fraction)` is called before
    every batch and at the end: it may raise (a cancelled or over-budget request) and the
    work stops there."""
    step = batch_size(model, n, grad) if most is None else max(1, min(batch_size(model, n, grad), most))
    for start in range(0, total, step):
        if progress is not None:
            progress(start / max(total, 1))
        with model.gate.background():
            yield slice(start, min(total, start + step))
    if progress is not None:
        progress(1.0)


def expand(inputs: dict[str, torch.Tensor], b: int) -> dict[str, torch.Tensor]:
    return {k: v.expand(b, -1) for k, v in inputs.items()}


def check_query(query: int, n: int) -> None:
    if not 0 <= query < n:
        raise IndexError(f"query token {query} out of range 0..{n - 1}")


def with_gradients(fn: Callable[_P, _T]) -> Callable[_P, _T]:
    """Run `fn` with autograd on, also when the caller is in inference mode or no_grad (an
    app may be): every tensor it makes, from tokenising on, is then a normal tensor."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        with torch.inference_mode(False), torch.enable_grad():
            return fn(*args, **kwargs)

    return wrapper
