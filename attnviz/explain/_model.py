"""Shared by the methods that run a model: batches through the background lane, gradients on
demand, input checks. Models are seen only through the Runner seam."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

import numpy as np
import torch

from ..models import Progress, Runner
from ..models.threads import this_thread as this_thread  # the explain methods' hooks import it here

_P = ParamSpec("_P")
_T = TypeVar("_T")

# One batched forward holds at most this many float32 attention entries (batch x heads x n x n)
# and this many tokens (batch x n): the token bound also caps the other activations at short
# inputs, so an interactive pass waits at most one batch (about 8 passes of 512 tokens).
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
    """Slices of range(total) sized for n-token inputs (at most `most` long), each body run in
    the background lane. `progress(done_fraction)` before every batch and at the end may raise
    to stop the work."""
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
    """Run `fn` with autograd on, also when the caller is in inference mode or no_grad."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        with torch.inference_mode(False), torch.enable_grad():
            return fn(*args, **kwargs)

    return wrapper


@with_gradients
def input_times_gradient(
    model: Runner, inputs: dict[str, torch.Tensor], objective: Callable[[torch.Tensor], torch.Tensor]
) -> np.ndarray:
    """(n,) float64, s_j = sum_d e[j,d] dF/de[j,d]: F = objective(final hidden states (1, n, d)),
    e the word embeddings (1, n, d) (before positions, segments and LayerNorm)."""
    with model.gate.background():
        e = model.input_embeddings()(inputs["input_ids"]).detach().requires_grad_(True)
        (grad,) = torch.autograd.grad(objective(model.last_hidden(inputs, inputs_embeds=e)), e)
    return (e * grad).sum(-1)[0].double().detach().cpu().numpy()
