"""`LongAttention`: exact attention of a long text, computed where you look.

The forward kept each layer's queries (H, n, d) and keys (KV, n, d) after rotary positions;
any row of any head is softmax(q_i K^T * scale) over the keys token i may see, in float32 as
eager attention. Whole maps are never held: reductions run over tiles of `tile_rows` queries.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ..models.gate import Cancelled

Cancel = threading.Event | Callable[[], bool] | None
Queries = int | Sequence[int] | np.ndarray | slice | range


def check_cancel(cancel: Cancel) -> None:
    """Raise `Cancelled` when the event is set or the callable answers True."""
    if cancel is not None and (cancel.is_set() if isinstance(cancel, threading.Event) else cancel()):
        raise Cancelled("cancelled")


def block_edges(n: int, size: int) -> np.ndarray:
    """size + 1 edges cutting 0..n into `size` blocks of near-equal length (n blocks when n <= size)."""
    if size < 1:
        raise ValueError("size must be at least 1")
    size = min(size, n)
    return np.linspace(0, n, size + 1).round().astype(np.int64)


def pair_counts(n: int, causal: bool) -> np.ndarray:
    """(n,): how many pairs of n tokens lie at each distance |i - j| and may attend (j <= i for a decoder)."""
    pairs = (n - np.arange(n)) * (1 if causal else 2)
    pairs[0] = n
    return pairs


@dataclass(eq=False)
class LongAttention:
    """Exact attention of one text through one model, computed on demand.

    tokens, special, spans, text, truncated, n_input_tokens: as on `Attention`.
    queries / keys: per layer float32 (heads, n, d) and (kv heads, n, d) tensors.
    scaling: per layer, what the scores q.k are multiplied by.
    head_limit_bytes: the largest full map `head()` returns.
    """

    tokens: list[str]
    model: str
    causal: bool
    queries: list[torch.Tensor]
    keys: list[torch.Tensor]
    scaling: list[float]
    head_limit_bytes: int
    special: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    spans: list[tuple[int, int]] = field(default_factory=list)
    text: str = ""
    truncated: bool = False
    n_input_tokens: int = 0
    tile_rows: int = 512

    def __post_init__(self) -> None:
        if len(self.queries) != len(self.keys) or not self.queries:
            raise ValueError("one query and one key tensor per layer")
        if self.queries[0].shape[1] != len(self.tokens):
            raise ValueError(f"{len(self.tokens)} tokens for queries of length {self.queries[0].shape[1]}")
        if len(self.special) != len(self.tokens):
            self.special = np.zeros(len(self.tokens), dtype=bool)

    # --- shape -----------------------------------------------------------------------------

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def layers(self) -> int:
        return len(self.queries)

    @property
    def heads(self) -> int:
        return int(self.queries[0].shape[0])

    @property
    def kv_heads(self) -> np.ndarray:
        """The key/value head each query head reads (grouped-query attention shares them)."""
        return np.arange(self.heads) // (self.heads // int(self.keys[0].shape[0]))

    @property
    def kept_bytes(self) -> int:
        """Bytes of queries and keys kept for all layers."""
        return sum(t.numel() * t.element_size() for t in [*self.queries, *self.keys])

    @property
    def full_bytes(self) -> int:
        """Bytes the full float32 maps of every head would take."""
        return self.layers * self.heads * self.n * self.n * 4

    # --- rows ------------------------------------------------------------------------------

    def _check(self, layer: int, head: int) -> None:
        if not 0 <= layer < self.layers:
            raise IndexError(f"layer {layer} out of range 0..{self.layers - 1}")
        if not 0 <= head < self.heads:
            raise IndexError(f"head {head} out of range 0..{self.heads - 1}")

    def _index(self, queries: Queries) -> np.ndarray:
        if isinstance(queries, slice):
            queries = np.arange(self.n)[queries]
        idx = np.atleast_1d(np.asarray(queries, dtype=np.int64))
        if idx.ndim != 1:
            raise ValueError("queries must be a token index or a list of them")
        if idx.size and (idx.min() < -self.n or idx.max() >= self.n):
            raise IndexError(f"query index out of range 0..{self.n - 1}")
        return idx % self.n if idx.size else idx

    def _weights(self, layer: int, head: int, idx: np.ndarray, width: int) -> torch.Tensor:
        """softmax rows (len(idx), width) over the first `width` keys (a causal tile needs no more)."""
        q = self.queries[layer][head, torch.from_numpy(idx)]  # (m, d)
        k = self.keys[layer][int(self.kv_heads[head]), :width]  # (width, d)
        scores = (q @ k.T).mul_(self.scaling[layer])  # (m, width)
        if self.causal:
            future = torch.arange(width)[None, :] > torch.from_numpy(idx)[:, None]
            scores.masked_fill_(future, float("-inf"))
        return torch.softmax(scores, dim=-1)

    def rows(self, layer: int, head: int, queries: Queries) -> np.ndarray:
        """float32 (len(queries), n): where each of these tokens looks; rows sum to 1."""
        self._check(layer, head)
        idx = self._index(queries)
        out = np.zeros((len(idx), self.n), dtype=np.float32)
        for start in range(0, len(idx), self.tile_rows):
            part = idx[start : start + self.tile_rows]
            width = int(part.max()) + 1 if self.causal else self.n
            out[start : start + len(part), :width] = self._weights(layer, head, part, width).numpy()
        return out

    def tile(self, layer: int, head: int, rows: slice | range, cols: slice | range) -> np.ndarray:
        """The full-resolution block rows x cols of one head's map (each row over all n keys)."""
        return self.rows(layer, head, rows)[:, self._index(cols)]

    def head(self, layer: int, head: int) -> np.ndarray:
        """float32 (n, n), the whole map of one head, when it fits under `head_limit_bytes`;
        past it a ValueError naming the size (use rows, tile, overview or received)."""
        self._check(layer, head)
        need = self.n * self.n * 4
        if need > self.head_limit_bytes:
            raise ValueError(
                f"one head's full map at {self.n:,} tokens takes {need / 1e9:.3g} GB, over the limit of "
                f"{self.head_limit_bytes / 1e9:.3g} GB: ask for rows, a tile, the overview or the received weights"
            )
        return self.rows(layer, head, slice(None))

    # --- reductions, tile by tile --------------------------------------------------------------

    def _tiles(self, layer: int, head: int, cancel: Cancel) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, rows (m, width)) over all queries, a tile at a time; width = n, or the
        causal part (the rest is zero)."""
        self._check(layer, head)
        for start in range(0, self.n, self.tile_rows):
            check_cancel(cancel)
            stop = min(self.n, start + self.tile_rows)
            width = stop if self.causal else self.n
            yield start, self._weights(layer, head, np.arange(start, stop), width).numpy()

    def overview(self, layer: int, head: int, size: int = 256, cancel: Cancel = None) -> np.ndarray:
        """float32 (b, b), b = min(size, n): the mean of each block of the full map, blocks cut
        by `block_edges(n, size)` (masked entries count as the zeros they are)."""
        return self.summary(layer, head, size, cancel)[0]

    def received(self, layer: int, head: int, cancel: Cancel = None) -> np.ndarray:
        """float32 (n,): the weight each token receives, summed over every query (column sums)."""
        return self.summary(layer, head, 1, cancel)[1]

    def summary(self, layer: int, head: int, size: int = 256, cancel: Cancel = None) -> tuple[np.ndarray, np.ndarray]:
        """(overview, received) of one head in one pass over its tiles."""
        edges = block_edges(self.n, size)
        sums = np.zeros((len(edges) - 1, len(edges) - 1), dtype=np.float64)
        total = np.zeros(self.n, dtype=np.float64)
        row_block = np.searchsorted(edges, np.arange(self.n), side="right") - 1  # block of each row
        for start, w in self._tiles(layer, head, cancel):
            width = w.shape[1]
            total[:width] += w.sum(axis=0, dtype=np.float64)
            cols = edges[:-1][edges[:-1] < width]
            by_col = np.add.reduceat(w, cols, axis=1, dtype=np.float64)  # (m, blocks that start < width)
            blocks = row_block[start : start + len(w)]
            first = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])  # each row block's first row
            sums[blocks[first], : len(cols)] += np.add.reduceat(by_col, first, axis=0)
        size_of = np.diff(edges).astype(np.float64)
        return (sums / np.outer(size_of, size_of)).astype(np.float32), total.astype(np.float32)

    def distance(self, layer: int, head: int, cancel: Cancel = None) -> np.ndarray:
        """float32 (n,): at each distance |i - j|, the mean weight over the pairs that may attend
        (j <= i for a decoder): local heads fall fast, long-range heads stay up."""
        total = np.zeros(self.n, dtype=np.float64)
        for start, w in self._tiles(layer, head, cancel):
            i = np.arange(start, start + len(w))[:, None]
            gap = np.abs(i - np.arange(w.shape[1])[None, :])
            total += np.bincount(gap.ravel(), weights=w.ravel().astype(np.float64), minlength=self.n)
        return (total / pair_counts(self.n, self.causal)).astype(np.float32)
