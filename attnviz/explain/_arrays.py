"""Shared array helpers of the explanation methods (numpy in, numpy or read-only torch views out)."""

from __future__ import annotations

import warnings
from typing import TypeAlias

import numpy as np
import torch

from ..result import Attention

AttentionLike: TypeAlias = "Attention | np.ndarray"


def as_weights(att: AttentionLike) -> np.ndarray:
    """(layers, heads, n, n) from an Attention or a bare array ((n, n) and (heads, n, n) too)."""
    w = att.weights if isinstance(att, Attention) else np.asarray(att)
    while w.ndim < 4:
        w = w[None]
    if w.ndim != 4 or w.shape[-1] != w.shape[-2]:
        raise ValueError(f"attention must have shape (layers, heads, n, n), got {w.shape}")
    return w


def read_only_view(a: np.ndarray) -> torch.Tensor:
    """A tensor sharing `a`'s memory, for reading only. A cache may hand out read-only arrays;
    torch warns about those (it cannot promise not to write), and nothing here writes."""
    a = np.ascontiguousarray(a)
    if a.flags.writeable:
        return torch.from_numpy(a)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable", category=UserWarning)
        return torch.from_numpy(a)
