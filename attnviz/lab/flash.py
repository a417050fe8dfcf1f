"""FlashAttention's tiles, written out: exact attention computed block by
block without ever holding the n x n matrix (Dao et al. 2022, FlashAttention; the online softmax of
Milakov & Gimelshein 2018).

For each block of queries, walk the blocks of keys keeping, per query row, the running maximum m
of the scores seen so far, the running sum l of exp(score - m) and the running output o. A new
block's scores S give m' = max(m, rowmax S); what was summed so far is rescaled by exp(m - m')
(the maximum moved), then l' = exp(m - m') l + rowsum exp(S - m') and
o' = exp(m - m') o + exp(S - m') V. At the end o / l is softmax(Q K^T / sqrt(d)) V, exactly; the
arithmetic is plain attention's n^2 d, only memory is saved. Float64 numpy, every step recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FlashStep:
    """One (query block, key block) step; arrays are per query row of the block. `skipped`: the
    whole block is masked; `scores` -inf where masked; `rescale` = exp(max_before - max_after)."""

    queries: tuple[int, int]
    keys: tuple[int, int]
    skipped: bool
    scores: np.ndarray | None
    max_before: np.ndarray
    max_after: np.ndarray
    rescale: np.ndarray
    sum_after: np.ndarray


@dataclass(frozen=True)
class FlashResult:
    """output (n_q, d_v) float64, the record of every step, and the block size used."""

    output: np.ndarray
    steps: list[FlashStep]
    block: int

    @property
    def largest_block_bytes(self) -> int:
        """Bytes of the largest score block held at once (float64): the memory a tile needs."""
        return max((s.scores.nbytes for s in self.steps if s.scores is not None), default=0)


def flash_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    block: int = 16,
    *,
    mask: np.ndarray | None = None,
    causal: bool = False,
    scale: float | None = None,
    record: bool = True,
) -> FlashResult:
    """softmax(q k^T * scale, where `mask` allows) v, one (block x block) tile at a time.

    q (n_q, d), k (n_k, d), v (n_k, d_v); `mask` (n_q, n_k) bool, True where a query may look;
    `scale` defaults to 1 / sqrt(d). With `record`, every step is kept.
    """
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    if q.ndim != 2 or k.ndim != 2 or v.ndim != 2 or q.shape[1] != k.shape[1] or k.shape[0] != v.shape[0]:
        raise ValueError(f"need q (n_q, d), k (n_k, d), v (n_k, d_v); got {q.shape}, {k.shape}, {v.shape}")
    if block < 1:
        raise ValueError("block must be at least 1")
    n_q, n_k = q.shape[0], k.shape[0]
    allowed = None if mask is None else np.asarray(mask, dtype=bool)  # None: every key
    if allowed is not None and allowed.shape != (n_q, n_k):
        raise ValueError(f"mask must have shape ({n_q}, {n_k}), got {allowed.shape}")
    if causal:
        lower = np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)  # query i sees keys up to its own position
        allowed = lower if allowed is None else allowed & lower
    if allowed is not None and not allowed.any(axis=1).all():
        raise ValueError(f"query row {int(np.flatnonzero(~allowed.any(axis=1))[0])} may attend to no key")
    s = float(scale) if scale is not None else q.shape[1] ** -0.5
    out = np.zeros((n_q, v.shape[1]))
    steps: list[FlashStep] = []
    for i0 in range(0, n_q, block):
        i1 = min(n_q, i0 + block)
        m = np.full(i1 - i0, -np.inf)
        total = np.zeros(i1 - i0)
        acc = np.zeros((i1 - i0, v.shape[1]))
        for j0 in range(0, n_k, block):
            j1 = min(n_k, j0 + block)
            part = None if allowed is None else allowed[i0:i1, j0:j1]
            if part is not None and not part.any():
                if record:
                    same = m.copy()
                    steps.append(FlashStep((i0, i1), (j0, j1), True, None, same, same, np.ones_like(m), total.copy()))
                continue
            scores = (q[i0:i1] @ k[j0:j1].T) * s
            if part is not None:
                scores = np.where(part, scores, -np.inf)
            new = np.maximum(m, scores.max(axis=1))
            base = np.where(np.isfinite(new), new, 0.0)  # a row that has seen nothing yet keeps 0
            rescale = np.exp(m - base)
            p = np.exp(scores - base[:, None])
            total = rescale * total + p.sum(axis=1)
            acc = rescale[:, None] * acc + p @ v[j0:j1]
            if record:
                steps.append(FlashStep((i0, i1), (j0, j1), False, scores, m.copy(), new.copy(), rescale, total.copy()))
            m = new
        out[i0:i1] = acc / total[:, None]
    return FlashResult(output=out, steps=steps, block=block)
