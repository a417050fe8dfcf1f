"""How a step picks its token from the model's logits: greedy (the likeliest), or a draw from
the softmax at a temperature over the `top_k` likeliest, and what a step reports of them.

A draw uses a `torch.Generator` seeded from (seed, position), not one generator run through the
steps: the same seed gives the same tokens, and a branch drawn from position p on draws what a
fresh generation from that prefix draws."""

from __future__ import annotations

import numpy as np
import torch

_SEED_STRIDE = 1_000_003  # a prime larger than any position, so (seed, position) pairs never share a draw


def choose(logits: torch.Tensor, temperature: float, top_k: int | None, seed: int, position: int) -> int:
    """The token id written at `position` (0-based in the whole sequence) from its logits (vocab,):
    the argmax when temperature is 0 (ties: the lowest id, as torch.argmax and transformers'
    greedy search take it), else one draw from softmax(logits / temperature) over the top_k
    likeliest (all when None), seeded by (seed, position)."""
    z = logits.detach().float().cpu()
    if temperature == 0:
        return int(torch.argmax(z))
    z = z / float(temperature)
    if top_k is not None and top_k < z.numel():
        kth = torch.topk(z, int(top_k)).values[-1]
        z = z.masked_fill(z < kth, float("-inf"))
    generator = torch.Generator().manual_seed(seed * _SEED_STRIDE + position)
    return int(torch.multinomial(torch.softmax(z, dim=-1), 1, generator=generator))


def probability(logits: np.ndarray, token_id: int) -> float:
    """The model's own softmax probability of `token_id` (before temperature and top-k), in float64."""
    z = np.asarray(logits, dtype=np.float64)
    top = float(z.max())
    return float(np.exp(z[int(token_id)] - top) / np.exp(z - top).sum())
