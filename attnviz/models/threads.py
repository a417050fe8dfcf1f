"""How many torch threads a forward pass gets on the CPU."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch

SMALL_INPUT_TOKENS = 128  # up to this many tokens a CPU forward runs on one thread


def cpu_threads_for(n_tokens: int, device: torch.device) -> contextlib.AbstractContextManager[None]:
    """One torch thread for a short input's CPU forward, then the thread count as it was.

    Two OpenMP threads wait on each other at every op's barrier, and when other work holds a
    core that wait is a time slice (bench/README.md); a short input gains nothing from a second
    thread anyway, a long one keeps torch's default."""
    return torch_threads(1 if device.type == "cpu" and n_tokens <= SMALL_INPUT_TOKENS else None)


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run with `n` torch threads in this thread, then restore; None changes nothing. (Under
    OpenMP, torch's CPU backend here, a thread that has run torch keeps its own count; one that
    runs its first op meanwhile takes the count set last.) The training lab and `cpu_threads_for`."""
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if n is not None:
            torch.set_num_threads(before)


def this_thread(hook: Callable[..., object]) -> Callable[..., None]:
    """`hook` for passes on the calling thread only: the model is shared, and another visitor's
    pass meanwhile must not write this record. The wrapper returns None whatever `hook` returns
    (a forward hook's value would replace the module's output)."""
    owner = threading.get_ident()

    def wrapper(*args: Any, **kwargs: Any) -> None:
        if threading.get_ident() == owner:
            hook(*args, **kwargs)

    return wrapper
