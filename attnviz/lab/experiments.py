"""The from-scratch lab's experiments as plain functions: how far two results differ, what
scaling does to row entropy, the word-order demo, and how cost grows with length."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import torch

from ..models import Runner, Steps
from ..result import Attention

SWEEP_SIZES = (16, 32, 64, 128, 256, 512)


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a - b| in float64, one slice of the first axis at a time (a whole long map in
    float64 would make temporaries of hundreds of MB)."""
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} and {b.shape}")
    if not a.size:
        return 0.0
    rows = zip(np.atleast_2d(a), np.atleast_2d(b), strict=True)
    return max(float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) for x, y in rows)


def row_entropy(scores: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Mean row entropy (nats) of softmax(scores + mask), in float64."""
    z = torch.as_tensor(np.asarray(scores, dtype=np.float64))
    if mask is not None:
        z = z + torch.as_tensor(np.asarray(mask, dtype=np.float64))
    return float(torch.distributions.Categorical(logits=z).entropy().mean())


def scaling_entropies(steps: Steps) -> tuple[float, float, float]:
    """(scaled, unscaled, uniform) mean row entropy of one head's walk: softmax of QK^T/sqrt(d_k),
    of QK^T, and ln n. Without scaling rows are sharper (lower entropy) as d_k grows."""
    scaled = row_entropy(steps["scores"].astype(np.float64) / np.sqrt(steps["q"].shape[1]), steps["mask"])
    return scaled, row_entropy(steps["scores"], steps["mask"]), float(np.log(steps["scores"].shape[0]))


def permutation(tokens_a: list[str], tokens_b: list[str]) -> list[int] | None:
    """perm[i] = position in B of A's i-th token (the k-th occurrence of a token maps to the k-th);
    None when B is not a reordering of A."""
    if sorted(tokens_a) != sorted(tokens_b):
        return None
    order_a, order_b = (sorted(range(len(t)), key=t.__getitem__) for t in (tokens_a, tokens_b))
    # stable sorts line up equal tokens in order of occurrence; perm[i] = j for each lined-up pair
    return [j for _, j in sorted(zip(order_a, order_b, strict=True))]


@dataclass(frozen=True)
class OrderResult:
    """B's maps put back in A's token order (`back`, an Attention over A's tokens) and the
    largest difference from A's own maps (0 up to rounding when the model has no positions)."""

    back: Attention
    diff: float


def order_demo(att_a: Attention, att_b: Attention) -> OrderResult | None:
    """Compare a sentence with a reordering of it; None when B is not a reordering of A."""
    perm = permutation(att_a.tokens, att_b.tokens)
    if perm is None:
        return None
    back = att_b.weights[:, :, perm][:, :, :, perm]  # B's maps in A's token order
    return OrderResult(replace(att_a, weights=back), max_abs_diff(att_a.weights, back))


@dataclass(frozen=True)
class CostRow:
    n: int  # tokens
    forward_s: float  # one forward pass, weights to numpy
    mb: float  # the weights array


def cost_sweep(runner: Runner, text: str, max_tokens: int, sizes: tuple[int, ...] = SWEEP_SIZES) -> list[CostRow]:
    """Time one forward pass at each size up to `max_tokens` on inputs made by repeating the
    text's words, and the size of its weights: L x H x n^2 float32 numbers."""
    words = text.split() or ["word"]
    rows = []
    for n in sizes:
        if n > min(max_tokens, runner.max_tokens):
            break
        long = " ".join((words * (n // len(words) + 2))[: n * 2])
        start = time.perf_counter()
        att = runner.attend(long, n)
        rows.append(CostRow(att.n, time.perf_counter() - start, att.weights.nbytes / 2**20))
    return rows
