"""Attention flow (Abnar & Zuidema 2020, §3): exact max flow through the layered attention
graph, by Dinic's algorithm on flat lists. Numpy only (no torch)."""

from __future__ import annotations

from collections import deque

import numpy as np

from ._arrays import AttentionLike, as_weights
from .rollout import _residual_layers

# Largest n for which `flow` runs: a few seconds on 2 shared cores (bench/results_explain.md).
# Cost grows about as n^3 (all rows) and n^2 (a row).
FLOW_MAX_N_ALL = 24  # every row: n x n max-flow problems
FLOW_MAX_N_ROW = 96  # one chosen row: n max-flow problems
# Integer capacities: exact max-flow arithmetic, 1e-9 rounding per edge.
_FLOW_SCALE = 10**9


class FlowTooLarge(ValueError):
    """Attention flow was asked for more tokens than it can handle in a few seconds."""


def flow_limit(n: int, row: int | None = None, max_n: int | None = None) -> str | None:
    """None when `flow(att, row)` can run for n tokens; else the message FlowTooLarge carries."""
    limit = max_n if max_n is not None else (FLOW_MAX_N_ALL if row is None else FLOW_MAX_N_ROW)
    if n <= limit:
        return None
    if row is None:
        return (
            f"attention flow for all rows is limited to {limit} tokens (this text has {n}): "
            f"choose one row (up to {FLOW_MAX_N_ROW} tokens) or use rollout"
        )
    return f"attention flow for one row is limited to {limit} tokens (this text has {n}): use rollout instead"


def flow(att: AttentionLike, row: int | None = None, max_n: int | None = None) -> np.ndarray:
    """Attention flow (Abnar & Zuidema 2020): (n, n) for all rows, or (n,) for one `row`. [i, j] is
    the max flow from top node i to input node j in the layered graph whose edge from (l, i) down
    to (l-1, j) has capacity Â_l[i, j]; rows then normalised to sum to 1. FlowTooLarge above
    FLOW_MAX_N_ALL tokens (all rows), FLOW_MAX_N_ROW (one row) or `max_n` when given."""
    w = as_weights(att)
    n = w.shape[-1]
    if message := flow_limit(n, row, max_n):
        raise FlowTooLarge(message)
    if row is not None and not 0 <= row < n:
        raise IndexError(f"row {row} out of range 0..{n - 1}")
    a = _residual_layers(w)  # (L, n, n) float64
    rows = range(n) if row is None else [row]
    if a.shape[0] == 1:
        values = a[0, list(rows)]  # one layer: each flow is a single edge
    else:
        solver = _FlowGraph(a)
        values = np.array([solver.row(i) for i in rows])
    values = values / np.maximum(values.sum(axis=-1, keepdims=True), np.finfo(np.float64).tiny)
    return values if row is None else values[0]


class _FlowGraph:
    """The flow graph of L >= 2 layers, built once for every (source, sink) pair (Dinic on flat
    lists; the tests hold it to networkx's values). Only the source's top row and the sink's
    input column carry flow, so the graph keeps s = 0, t = 1 and the middle layers 1..L-1 (node
    2 + (l - 1) n + k); each pair sets the capacities out of s (Â_L[i, :]) and into t
    (Â_1[:, j]). Edge e and its reverse e ^ 1 are stored side by side."""

    def __init__(self, a: np.ndarray):
        self.caps = np.rint(a * _FLOW_SCALE).astype(np.int64)  # (L, n, n)
        L, n, _ = a.shape
        self.n = n
        self.size = 2 + (L - 1) * n
        self.edges: list[list[int]] = [[] for _ in range(self.size)]  # edge ids out of each node
        self.to: list[int] = []
        self.capacity: list[int] = []

        def node(layer: int, k: int) -> int:
            return 2 + (layer - 1) * n + k

        self.out_of_s = [self._add(0, node(L - 1, k), 0) for k in range(n)]
        for layer in range(L - 1, 1, -1):  # (layer, i) -> (layer - 1, j), capacity Â_layer[i, j]
            c = self.caps[layer - 1].tolist()
            for i in range(n):
                for j in range(n):
                    if c[i][j] > 0:
                        self._add(node(layer, i), node(layer - 1, j), c[i][j])
        self.into_t = [self._add(node(1, k), 1, 0) for k in range(n)]

    def _add(self, u: int, v: int, c: int) -> int:
        e = len(self.to)
        self.edges[u].append(e)
        self.to.append(v)
        self.capacity.append(c)
        self.edges[v].append(e + 1)
        self.to.append(u)
        self.capacity.append(0)
        return e

    def row(self, i: int) -> np.ndarray:
        base = self.capacity
        for e, c in zip(self.out_of_s, self.caps[-1, i].tolist(), strict=True):
            base[e] = c
        bottom = self.caps[0].T.tolist()  # bottom[j][k] = Â_1[k, j]
        out = np.empty(self.n)
        for j in range(self.n):
            for e, c in zip(self.into_t, bottom[j], strict=True):
                base[e] = c
            out[j] = self._max_flow(base[:]) / _FLOW_SCALE
        return out

    def _max_flow(self, cap: list[int]) -> int:
        """Dinic: BFS levels from s, then blocking flows by DFS with current arcs."""
        edges, to, size = self.edges, self.to, self.size
        total = 0
        while True:
            level = [-1] * size
            level[0] = 0
            queue = deque([0])
            while queue:
                u = queue.popleft()
                lu = level[u] + 1
                if level[1] >= 0 and lu > level[1]:
                    break  # nodes beyond t's level cannot be on a shortest path
                for e in edges[u]:
                    v = to[e]
                    if level[v] < 0 and cap[e] > 0:
                        level[v] = lu
                        queue.append(v)
            if level[1] < 0:
                return total
            arc = [0] * size
            path: list[int] = []  # edge ids from s
            u = 0
            while True:
                if u == 1:  # augment by the path's bottleneck and start again from s
                    f = min(cap[e] for e in path)
                    for e in path:
                        cap[e] -= f
                        cap[e ^ 1] += f
                    total += f
                    path.clear()
                    u = 0
                    continue
                out, i, lu = edges[u], arc[u], level[u] + 1
                while i < len(out) and not (cap[out[i]] > 0 and level[to[out[i]]] == lu):
                    i += 1
                arc[u] = i
                if i < len(out):
                    path.append(out[i])
                    u = to[out[i]]
                    continue
                level[u] = -1  # a dead end: never enter it again in this phase
                if not path:
                    break
                u = to[path.pop() ^ 1]
                arc[u] += 1
