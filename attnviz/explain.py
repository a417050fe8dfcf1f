"""How far attention explains: rollout, flow, norm-based weights, attributions, head statistics.

Everything here takes an `Attention` (numpy) or a runner from pretrained.py and returns numpy.
Row i of every (n, n) map is where token i looks. Sources: Abnar & Zuidema 2020 (rollout,
flow), Kobayashi et al. 2020 (norm-based weights), Clark et al. 2019 (head statistics),
Jain & Wallace 2019 (agreement), Sundararajan et al. 2017 (integrated gradients).
"""

from __future__ import annotations

import contextlib
import functools
import math
import unicodedata
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, TypeAlias, TypeVar, cast

import numpy as np
import torch

from .pretrained import PretrainedModel, ScratchModel
from .result import Attention
from .scratch import EncoderLayer

__all__ = [
    "BROAD_ENTROPY",
    "ENTROPY_SMOOTHING",
    "FLOW_MAX_N_ALL",
    "FLOW_MAX_N_ROW",
    "LABEL_SHARE",
    "FlowTooLarge",
    "MinimalPair",
    "NormWeights",
    "agreement",
    "completeness_gap",
    "find_token",
    "flow",
    "flow_limit",
    "head_labels",
    "head_stats",
    "input_x_gradient",
    "integrated_gradients",
    "kendall_tau",
    "minimal_pair",
    "norm_reconstruction",
    "norm_weights",
    "occlusion",
    "rollout",
    "rollout_layers",
    "sink_shares",
    "spearman_rho",
]

Runner: TypeAlias = "PretrainedModel | ScratchModel"
AttentionLike: TypeAlias = "Attention | np.ndarray"
_T = TypeVar("_T")


def _forward_slot(fn: Callable[..., _T]) -> Callable[..., _T]:
    """Hold one of the runner's forward-pass slots (first argument) while `fn` runs: on a
    public demo, explanations count against the same bound on simultaneous forward passes as
    `attend`, so memory stays predictable. The functions wrapped here never nest."""

    @functools.wraps(fn)
    def wrapper(model: Any, *args: Any, **kwargs: Any) -> _T:
        with getattr(model, "forward_slots", None) or contextlib.nullcontext():
            return fn(model, *args, **kwargs)

    return wrapper


def _weights(att: AttentionLike) -> np.ndarray:
    """(layers, heads, n, n) from an Attention or a bare array ((n, n) and (heads, n, n) too)."""
    w = att.weights if isinstance(att, Attention) else np.asarray(att)
    while w.ndim < 4:
        w = w[None]
    if w.ndim != 4 or w.shape[-1] != w.shape[-2]:
        raise ValueError(f"attention must have shape (layers, heads, n, n), got {w.shape}")
    return w


def _read_only_view(a: np.ndarray) -> torch.Tensor:
    """A tensor sharing `a`'s memory, for reading only. A cache may hand out read-only arrays;
    torch warns about those (it cannot promise not to write), and nothing here writes."""
    a = np.ascontiguousarray(a)
    if a.flags.writeable:
        return torch.from_numpy(a)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable", category=UserWarning)
        return torch.from_numpy(a)


# ---------------------------------------------------------------- rollout (Abnar & Zuidema 2020, §3)


def _residual_layers(w: np.ndarray, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Â_l = (mean_h A[l, h] + I) / rowsum: the residual connection as attention to oneself.
    (L, n, n) tensor."""
    n = w.shape[-1]
    t = _read_only_view(w)
    a = t.sum(dim=1, dtype=dtype) / w.shape[1] + torch.eye(n, dtype=dtype)  # (L, n, n)
    return a / a.sum(dim=-1, keepdim=True)


def rollout_layers(att: AttentionLike, start_layer: int = 0) -> np.ndarray:
    """Rollout after each layer from `start_layer` on: (layers - start_layer, n, n) float32.

    R_start = Â_start, R_l = Â_l R_{l-1}; entry [k] is the rollout up to layer start_layer + k.
    """
    w = _weights(att)
    if not 0 <= start_layer < w.shape[0]:
        raise IndexError(f"start_layer {start_layer} out of range 0..{w.shape[0] - 1}")
    with torch.inference_mode():
        a = _residual_layers(w[start_layer:], torch.float32)
        for k in range(1, a.shape[0]):
            a[k] = a[k] @ a[k - 1]  # (n, n): a product of row-stochastic matrices stays one
        return a.numpy()


def rollout(att: AttentionLike, start_layer: int = 0) -> np.ndarray:
    """Attention rollout (n, n) float32: R = Â_L ... Â_start. Row i: how much of the top-layer
    token i traces back to input token j, if attention and residuals mixed tokens linearly."""
    return rollout_layers(att, start_layer)[-1]


# ---------------------------------------------------------------- attention flow (same paper, §3)

# Largest n for which `flow` runs, measured with bench/bench_explain.py on 2 CPU cores and the
# 6-layer MiniLM (bench/results_explain.md): at the limit a quiet machine takes about 1 s for
# all rows and under 3 s for the slowest row, so a machine shared with another job (twice as
# slow, measured) still stays under 5 s. Cost grows about as n^3 (all rows) and n^2 (a row).
FLOW_MAX_N_ALL = 24  # every row: n x n max-flow problems
FLOW_MAX_N_ROW = 96  # one chosen row: n max-flow problems
# Capacities become integers (exact arithmetic in the max-flow search); the rounding error,
# 1e-9 per edge, is far below anything a figure shows.
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
    """Attention flow (Abnar & Zuidema 2020): (n, n) for all rows, or (n,) for one `row`.

    A layered graph has a node per (layer, position); the edge from (l, i) down to (l-1, j)
    has capacity Â_l[i, j]. Entry [i, j] is the max flow from top node i to input node j;
    each row is then normalised to sum to 1. Raises FlowTooLarge above FLOW_MAX_N_ALL tokens
    (all rows) or FLOW_MAX_N_ROW (one row), or `max_n` when given.
    """
    w = _weights(att)
    n = w.shape[-1]
    message = flow_limit(n, row, max_n)
    if message:
        raise FlowTooLarge(message)
    if row is not None and not 0 <= row < n:
        raise IndexError(f"row {row} out of range 0..{n - 1}")
    with torch.inference_mode():
        a = _residual_layers(w).numpy()  # (L, n, n) float64
    rows = range(n) if row is None else [row]
    if a.shape[0] == 1:
        values = a[0, list(rows)]  # one layer: each flow is a single edge
    else:
        solver = _FlowGraph(a)
        values = np.array([solver.row(i) for i in rows])
    values = values / np.maximum(values.sum(axis=-1, keepdims=True), np.finfo(np.float64).tiny)
    return values if row is None else values[0]


class _FlowGraph:
    """The flow graph of L >= 2 layers, built once and reused for every (source, sink) pair,
    with Dinic's algorithm on flat lists (5-7x faster than networkx's shortest augmenting path
    here; the tests hold both to the same values).

    Only the source's row of the top layer can carry flow (no edge enters layer L) and only the
    sink's column of the input layer can receive it (input nodes have no way out), so the
    graph keeps one source node s = 0, one sink node t = 1 and the middle layers 1..L-1
    (node 2 + (l - 1) n + k); each pair sets the capacities of the edges out of s (Â_L[i, :])
    and into t (Â_1[:, j]). Edge e and its reverse e ^ 1 are stored side by side.
    """

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


# ---------------------------------------------------------------- norm-based weights (Kobayashi et al. 2020)


@dataclass(frozen=True, eq=False)
class NormWeights:
    """Norm-based weights of one text (Kobayashi et al. 2020, §3).

    per_head:     (layers, heads, n, n) float32, ||alpha[h,i,j] f_h(x_j)|| = alpha[h,i,j] ||f_h(x_j)||.
    value_norms:  (layers, heads, n) float32, ||f_h(x_j)||: how much token j can give at all.
    head_cosines: (layers, n, heads, heads) float32, cosine between f_h(x_j) and f_g(x_j).
    per_layer:    (layers, n, n) float32, || sum_h alpha[h,i,j] f_h(x_j) || (vector sum, then
                  norm), computed on first use; `layer_norms(l)` gives one layer.
    Rows do not sum to 1: the size of what moves is the point.
    """

    tokens: list[str]
    per_head: np.ndarray
    value_norms: np.ndarray
    head_cosines: np.ndarray
    special: np.ndarray
    model: str = ""

    @cached_property
    def per_layer(self) -> np.ndarray:
        return np.stack([self.layer_norms(layer) for layer in range(self.per_head.shape[0])])

    def layer_norms(self, layer: int) -> np.ndarray:
        """|| sum_h alpha[h,i,j] f_h(x_j) || of one layer, (n, n) float32.

        With p_h = alpha[h,i,j] ||f_h(x_j)|| and C_j the cosines between the heads' vectors at j,
        the squared norm is p^T C_j p: no (n, n, d) tensor is ever formed. Rows are done in
        blocks whose transposed copy stays in cache."""
        ph = _read_only_view(self.per_head[layer])  # (H, n, n)
        cos = _read_only_view(self.head_cosines[layer])  # (n_j, H, H)
        n = ph.shape[-1]
        out = torch.empty(n, n)
        with torch.inference_mode():
            for i0 in range(0, n, _NORM_BLOCK):
                p = ph[:, i0 : i0 + _NORM_BLOCK].permute(2, 1, 0).contiguous()  # (n_j, b_i, H)
                sq = ((p @ cos) * p).sum(-1)  # (n_j, b_i)
                out[i0 : i0 + _NORM_BLOCK] = sq.clamp_min_(0).sqrt_().T
        return out.numpy()

    def as_attention(self) -> Attention:
        """per_head with each row scaled to sum to 1, as an Attention for the views and rollout."""
        w = self.per_head / np.maximum(self.per_head.sum(-1, keepdims=True), np.finfo(np.float32).tiny)
        return Attention(tokens=self.tokens, weights=w, model=f"{self.model} (norm-based)", special=self.special)


_NORM_BLOCK = 64  # query rows per block in NormWeights.layer_norms (measured: 64 is fastest at n=512)


@dataclass
class _AttentionParts:
    value: torch.nn.Linear
    output: torch.nn.Linear  # the output projection, before dropout, residual and LayerNorm
    n_heads: int
    head_dim: int


def _attention_parts(model: Runner) -> list[_AttentionParts]:
    """Where each layer keeps W_V, b_V, W_O, b_O: the scratch encoder or a BERT-family model."""
    if isinstance(model, ScratchModel):
        mhas = [cast(EncoderLayer, layer).attention for layer in model.encoder.layers]
        return [_AttentionParts(m.value, m.output, m.n_heads, m.head_dim) for m in mhas]
    hf = getattr(model, "hf_model", None)
    base = getattr(hf, "base_model", hf)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    parts: list[_AttentionParts] = []
    for layer in layers if layers is not None else []:
        self_attn = getattr(getattr(layer, "attention", None), "self", None)
        dense = getattr(getattr(getattr(layer, "attention", None), "output", None), "dense", None)
        value = getattr(self_attn, "value", None)
        heads = getattr(self_attn, "num_attention_heads", None)
        size = getattr(self_attn, "attention_head_size", None)
        if not (isinstance(value, torch.nn.Linear) and isinstance(dense, torch.nn.Linear) and heads and size):
            parts = []
            break
        parts.append(_AttentionParts(value, dense, int(heads), int(size)))
    if not parts:
        kind = getattr(getattr(hf, "config", None), "model_type", type(model).__name__)
        raise ValueError(
            f"norm-based weights need a BERT-family encoder (BERT, RoBERTa, ELECTRA, MiniLM) or the "
            f"scratch encoder; model '{getattr(model, 'name', model)}' ({kind}) has another layout"
        )
    return parts


@_forward_slot
def _capture(
    model: Runner, text: str, hook_output: int | None = None
) -> tuple[Any, list[_AttentionParts], list[torch.Tensor], np.ndarray, torch.Tensor | None]:
    """One forward: each layer's value projection x W_V + b_V (n, heads * head_dim), alpha
    (layers, heads, n, n) float32 numpy and, for layer `hook_output`, what the output
    projection returned (n, d). Hooks read what the forward computes; nothing is recomputed."""
    parts = _attention_parts(model)
    enc = model.encode(text)
    values: list[torch.Tensor] = []
    projected: list[torch.Tensor] = []

    def grab(into: list[torch.Tensor]) -> Callable[[torch.nn.Module, Any, torch.Tensor], None]:
        def hook(_m: torch.nn.Module, _args: Any, out: torch.Tensor) -> None:
            into.append(out[0])  # batch of one

        return hook

    handles = [p.value.register_forward_hook(grab(values)) for p in parts]
    if hook_output is not None:
        handles.append(parts[hook_output].output.register_forward_hook(grab(projected)))
    try:
        with torch.inference_mode():
            alphas = model.attention_array(enc.inputs)  # (L, H, n, n)
    finally:
        for h in handles:
            h.remove()
    if len(values) != len(parts) or alphas.shape[0] != len(parts):
        raise ValueError(f"model '{model.name}' did not give one value projection and attention map per layer")
    return enc, parts, values, alphas, projected[0] if projected else None


def _transformed(p: _AttentionParts, v: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """f_h(x_j) = (x_j W_V + b_V)_h W_O[h-slice] from v = x W_V + b_V (n, H * hs): (H, n, d),
    output bias excluded. `out` is reused across layers: fresh pages of a large tensor cost time."""
    v = v.view(v.shape[0], p.n_heads, p.head_dim).transpose(0, 1)  # (H, n, hs)
    w_o = p.output.weight.view(-1, p.n_heads, p.head_dim).permute(1, 2, 0).to(v.dtype)  # (H, hs, d)
    return torch.matmul(v, w_o, out=out)  # (H, n, d)


def norm_weights(model: Runner, text: str) -> NormWeights:
    """Norm-based weights ||alpha f(x)|| of every layer and head (Kobayashi et al. 2020).

    Works for the scratch encoder and Hugging Face BERT-family encoders; other layouts raise
    ValueError. Runs its own forward pass under inference mode.
    """
    enc, parts, values, alphas, _ = _capture(model, text)
    L, H, n, _ = alphas.shape
    value_norms = np.empty((L, H, n), dtype=np.float32)
    head_cosines = np.empty((L, n, H, H), dtype=np.float32)
    with torch.inference_mode():
        f = torch.empty(H, n, parts[0].output.out_features, device=values[0].device)
        for layer, (p, v) in enumerate(zip(parts, values, strict=True)):
            _transformed(p, v.float(), out=f)  # (H, n, d)
            fj = f.transpose(0, 1)  # (n, H, d)
            gram = fj @ fj.transpose(1, 2)  # (n, H, H): <f_h(x_j), f_g(x_j)>
            f_norm = torch.diagonal(gram, dim1=1, dim2=2).sqrt()  # (n, H): ||f_h(x_j)||
            inv = 1 / f_norm.clamp_min(torch.finfo(f.dtype).tiny)
            head_cosines[layer] = (gram * inv[:, :, None] * inv[:, None, :]).cpu().numpy()
            f_norm = f_norm.T.contiguous().cpu()  # (H, n)
            value_norms[layer] = f_norm.numpy()
            # in place, alpha becomes alpha ||f|| = ||alpha f|| (alpha >= 0)
            torch.from_numpy(alphas[layer]).mul_(f_norm[:, None, :])
    return NormWeights(
        tokens=enc.tokens,
        per_head=alphas,
        value_norms=value_norms,
        head_cosines=head_cosines,
        special=enc.special,
        model=model.name,
    )


def norm_reconstruction(model: Runner, text: str, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """(sum_h sum_j alpha[h,i,j] f_h(x_j) + b_O, what the attention output projection returned),
    both (n, d) float64: equal within float tolerance when the decomposition is exact."""
    _, parts, values, alphas, projected = _capture(model, text, hook_output=layer)
    assert projected is not None
    p = parts[layer]
    with torch.inference_mode():
        f = _transformed(p, values[layer].double())  # (H, n, d)
        alpha = torch.from_numpy(alphas[layer]).to(f.device).double()  # (H, n, n)
        mixed = (alpha @ f).sum(dim=0)  # (n, d): sum over heads of alpha f
        if p.output.bias is not None:
            mixed = mixed + p.output.bias.double()
        return mixed.cpu().numpy(), projected.double().cpu().numpy()


# ---------------------------------------------------------------- attributions for one query token

# Activations of one batched forward stay under about this many float32 attention entries
# (batch x heads x n x n, ~0.5 GB with the rest): n variants or steps go through in chunks.
_BATCH_BUDGET = 2**25


def _batch_size(model: Runner, n: int, grad: bool) -> int:
    per_item = model.n_heads * n * n * (4 if grad else 1)
    return max(1, _BATCH_BUDGET // per_item)


def _expand(inputs: dict[str, torch.Tensor], b: int) -> dict[str, torch.Tensor]:
    return {k: v.expand(b, -1) for k, v in inputs.items()}


def _check_query(query: int, n: int) -> None:
    if not 0 <= query < n:
        raise IndexError(f"query token {query} out of range 0..{n - 1}")


@_forward_slot
def occlusion(model: Runner, text: str, query: int) -> np.ndarray:
    """Leave-one-out for token `query`: (n,) float64, score[j] = cosine distance between the
    query's final representation with token j replaced by [MASK] and without.

    Every ordinary token is scored, the query itself included (masking it is the largest
    change one would expect); special tokens are not masked and score 0.
    """
    mask_id = getattr(model.tokenizer, "mask_token_id", None)
    if mask_id is None:
        raise ValueError(f"model '{model.name}' has no [MASK] token to occlude with")
    enc = model.encode(text)
    ids = enc.inputs["input_ids"]  # (1, n)
    n = ids.shape[1]
    _check_query(query, n)
    targets = np.flatnonzero(~enc.special)
    scores = np.zeros(n)
    with torch.inference_mode():
        h0 = model.last_hidden(enc.inputs)[0, query]  # (d,)
        step = _batch_size(model, n, grad=False)
        for start in range(0, len(targets), step):
            chunk = torch.as_tensor(targets[start : start + step], device=ids.device)
            b = len(chunk)
            batch = _expand(enc.inputs, b)
            batch_ids = ids.expand(b, -1).clone()  # (b, n)
            batch_ids[torch.arange(b), chunk] = mask_id
            batch["input_ids"] = batch_ids
            h = model.last_hidden(batch)[:, query]  # (b, d)
            cos = torch.nn.functional.cosine_similarity(h, h0[None], dim=-1)
            scores[targets[start : start + step]] = (1 - cos).double().cpu().numpy()
    return scores


def _objective(model: Runner, inputs: dict[str, torch.Tensor], query: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """F(e) = <h_query(e), u>, u = h_query(e0) / ||h_query(e0)||: the length of the query's final
    representation along its unperturbed direction; F(e0) = ||h_query(e0)||. e: (b, n, d)
    word embeddings (before positions, segments and LayerNorm)."""
    with torch.no_grad():  # not inference mode: u is saved for the backward pass
        h0 = model.last_hidden(inputs)[0, query]
    u = h0 / h0.norm()

    def objective(e: torch.Tensor) -> torch.Tensor:  # (b, n, d) -> (b,)
        h = model.last_hidden(_expand(inputs, e.shape[0]), inputs_embeds=e)[:, query]
        return h @ u

    return objective


def _with_gradients(fn: Callable[..., _T]) -> Callable[..., _T]:
    """Run `fn` with autograd on, also when the caller is in inference mode or no_grad (an
    app may be): every tensor it makes, from tokenising on, is then a normal tensor."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> _T:
        with torch.inference_mode(False), torch.enable_grad():
            return fn(*args, **kwargs)

    return wrapper


@_forward_slot
@_with_gradients
def input_x_gradient(model: Runner, text: str, query: int) -> np.ndarray:
    """Input x gradient for token `query`: (n,) float64, s_j = sum_d e[j,d] dF/de[j,d] with F
    the query's final representation projected on its own direction (see `_objective`).
    Every position is scored, special tokens included."""
    enc = model.encode(text)
    _check_query(query, enc.inputs["input_ids"].shape[1])
    objective = _objective(model, enc.inputs, query)
    e = model.input_embeddings()(enc.inputs["input_ids"]).detach().requires_grad_(True)  # (1, n, d)
    (grad,) = torch.autograd.grad(objective(e).sum(), e)
    return (e * grad).sum(-1)[0].double().detach().cpu().numpy()


@_forward_slot
@_with_gradients
def _integrated(
    model: Runner, text: str, query: int, steps: int, baseline: Literal["mask", "zero"]
) -> tuple[np.ndarray, float]:
    """Integrated gradients (Sundararajan et al. 2017) by the midpoint rule on `steps` points:
    s_j = sum_d (e - e')[j,d] * mean_k dF/de[j,d] at e' + (k + 1/2)/steps (e - e').
    Returns the scores and the completeness gap |sum_j s_j - (F(e) - F(e'))|."""
    if steps < 1:
        raise ValueError("steps must be at least 1")
    if baseline not in ("mask", "zero"):
        raise ValueError("baseline must be 'mask' or 'zero'")
    enc = model.encode(text)
    ids = enc.inputs["input_ids"]
    n = ids.shape[1]
    _check_query(query, n)
    objective = _objective(model, enc.inputs, query)
    table = model.input_embeddings()
    keep = torch.as_tensor(enc.special, device=ids.device)[None, :, None]  # (1, n, 1)
    e = table(ids).detach()  # (1, n, d)
    if baseline == "mask":
        mask_id = getattr(model.tokenizer, "mask_token_id", None)
        if mask_id is None:
            raise ValueError(f"model '{model.name}' has no [MASK] token for the baseline")
        base = table(torch.full_like(ids, mask_id)).detach()
    else:
        base = torch.zeros_like(e)
    # Special tokens keep their embeddings in the baseline, so they score 0 and the scores
    # share out F(e) - F(e') among the ordinary tokens.
    base = torch.where(keep, e, base)
    delta = e - base  # (1, n, d)
    total = torch.zeros_like(e)
    step = _batch_size(model, n, grad=True)
    alphas = (torch.arange(steps, dtype=e.dtype, device=e.device) + 0.5) / steps
    for start in range(0, steps, step):
        a = alphas[start : start + step, None, None]  # (b, 1, 1)
        point = (base + a * delta).requires_grad_(True)  # (b, n, d)
        (grad,) = torch.autograd.grad(objective(point).sum(), point)
        total += grad.sum(dim=0, keepdim=True)
    scores = (delta * total / steps).sum(-1)[0].double()  # (n,)
    with torch.no_grad():
        f_e, f_base = objective(torch.cat([e, base])).double().tolist()
    gap = abs(float(scores.sum()) - (f_e - f_base))
    return scores.detach().cpu().numpy(), gap


def integrated_gradients(
    model: Runner, text: str, query: int, steps: int = 32, baseline: Literal["mask", "zero"] = "mask"
) -> np.ndarray:
    """Integrated gradients of F (see `input_x_gradient`) for token `query`: (n,) float64.

    baseline "mask": every ordinary token's embedding replaced by [MASK]'s; "zero": by zeros.
    Special tokens are the same in input and baseline, so they score 0. The scores add up to
    F(input) - F(baseline) as steps grow (`completeness_gap` measures how nearly)."""
    return _integrated(model, text, query, steps, baseline)[0]


def completeness_gap(
    model: Runner, text: str, query: int, steps: int = 32, baseline: Literal["mask", "zero"] = "mask"
) -> float:
    """|sum_j s_j - (F(input) - F(baseline))| of `integrated_gradients`: falls as steps grow."""
    return _integrated(model, text, query, steps, baseline)[1]


# ---------------------------------------------------------------- agreement (Jain & Wallace 2019, §4)


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties sharing their average rank."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts  # ranks before each distinct value
    return (first + (counts + 1) / 2.0)[inverse]


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b: (concordant - discordant) / sqrt((pairs - ties_a)(pairs - ties_b)).
    NaN when either input is constant. O(n^2) memory: fine for a sentence's tokens."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"rankings differ in length: {a.size} and {b.size}")
    iu = np.triu_indices(a.size, k=1)
    sa = np.sign(a[:, None] - a[None, :])[iu]  # one entry per pair i < j
    sb = np.sign(b[:, None] - b[None, :])[iu]
    denom = math.sqrt(float(np.count_nonzero(sa)) * float(np.count_nonzero(sb)))
    return float((sa * sb).sum() / denom) if denom > 0 else math.nan


def spearman_rho(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho: Pearson correlation of the (tie-averaged) ranks. NaN for constant input."""
    ra = _ranks(np.asarray(a, dtype=np.float64).ravel())
    rb = _ranks(np.asarray(b, dtype=np.float64).ravel())
    if ra.shape != rb.shape:
        raise ValueError(f"rankings differ in length: {ra.size} and {rb.size}")
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = math.sqrt(float(ra @ ra) * float(rb @ rb))
    return float(ra @ rb / denom) if denom > 0 else math.nan


def agreement(a: np.ndarray, b: np.ndarray, keep: Attention | np.ndarray | None = None) -> dict[str, float]:
    """Rank agreement of two scores over the same tokens: {"kendall", "spearman", "n"}.

    keep: a boolean mask of the tokens to compare, or an Attention whose special tokens are
    left out (their huge attention would decide the ranking); None compares every token.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"scores must be two vectors over the same tokens, got {a.shape} and {b.shape}")
    mask = np.ones(a.size, dtype=bool)
    if isinstance(keep, Attention):
        mask = ~keep.special
    elif keep is not None:
        mask = np.asarray(keep, dtype=bool)
    if mask.shape != a.shape:
        raise ValueError(f"keep mask has {mask.size} entries for {a.size} tokens")
    return {
        "kendall": kendall_tau(a[mask], b[mask]),
        "spearman": spearman_rho(a[mask], b[mask]),
        "n": float(mask.sum()),
    }


# ---------------------------------------------------------------- head statistics (Clark et al. 2019, §3)

ENTROPY_SMOOTHING = 1e-6  # A' = (A + eps) / (1 + n eps): log 0 never happens, one-hot rows give ~0
LABEL_SHARE = 0.5  # a head is "previous token", "[SEP] sink", ... when over half its attention goes there
BROAD_ENTROPY = 0.8  # "broad" when the mean row entropy exceeds this fraction of ln n


def _is_punctuation(token: str) -> bool:
    return bool(token) and all(unicodedata.category(c).startswith("P") for c in token)


def _token_groups(att: Attention) -> dict[str, np.ndarray]:
    """Column indices of [CLS] (the first special token), [SEP] (the other special tokens)
    and punctuation (ordinary tokens made only of punctuation characters)."""
    specials = np.flatnonzero(att.special)
    punct = [i for i, t in enumerate(att.tokens) if not att.special[i] and _is_punctuation(t)]
    return {"cls": specials[:1], "sep": specials[1:], "punct": np.array(punct, dtype=int)}


def head_stats(att: Attention) -> dict[str, np.ndarray]:
    """Per (layer, head), averaged over query rows: "entropy" (nats), "entropy_rel" (entropy
    / ln n), shares of attention to "cls", "sep", "punct", "self", "prev" (A[i, i-1], rows
    i >= 1) and "next" (A[i, i+1], rows i < n-1). Each value is a (layers, heads) float64 array.
    """
    w = _read_only_view(att.weights)  # (L, H, n, n)
    n = att.n
    with torch.inference_mode():
        entropy, received = _per_head_pass(w)  # (L, H), (L, H, n)
        zeros = np.zeros_like(entropy)
        diag = torch.diagonal(w, dim1=-2, dim2=-1)  # (L, H, n)
        prev = torch.diagonal(w, offset=-1, dim1=-2, dim2=-1)  # A[i, i-1], (L, H, n-1)
        nxt = torch.diagonal(w, offset=1, dim1=-2, dim2=-1)  # A[i, i+1], (L, H, n-1)
        stats = {
            "entropy": entropy,
            "entropy_rel": entropy / math.log(n) if n > 1 else zeros,
            "self": diag.mean(-1).double().numpy(),
            "prev": prev.mean(-1).double().numpy() if n > 1 else zeros,
            "next": nxt.mean(-1).double().numpy() if n > 1 else zeros,
        }
    for name, cols in _token_groups(att).items():
        stats[name] = received[..., cols].sum(-1)  # (L, H): mean over rows of the mass on cols
    return stats


def _per_head_pass(w: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """One pass over each (n, n) map of w (L, H, n, n) while it sits in cache: the mean row
    entropy (L, H) and the mean attention each column receives (L, H, n).

    Entropy is smoothed: p = c (A + eps), c = 1 / (1 + n eps). Since sum_j p = 1,
    sum_ij p log p = n log c + c sum_ij q log q with q = A + eps: one add, one log, one dot."""
    L, H, n, _ = w.shape
    eps = ENTROPY_SMOOTHING
    c = 1.0 / (1.0 + n * eps)
    q = torch.empty(n * n, dtype=torch.float32)
    log_q = torch.empty_like(q)
    entropy = np.empty((L, H))
    received = torch.empty(L, H, n)
    ones = torch.ones(n)
    for layer in range(L):
        for head in range(H):
            a = w[layer, head]  # (n, n)
            torch.add(a.reshape(-1), eps, out=q)
            torch.log(q, out=log_q)
            entropy[layer, head] = -(math.log(c) + c * float(torch.dot(q, log_q)) / n)
            torch.mv(a.T, ones, out=received[layer, head])  # column sums (a BLAS call: 10x a sum)
    return entropy, received.double().numpy() / n


_LABELS = {
    "prev": "previous token",
    "next": "next token",
    "self": "self",
    "cls": "[CLS] sink",
    "sep": "[SEP] sink",
    "punct": "punctuation",
}


def head_labels(stats: dict[str, np.ndarray]) -> np.ndarray:
    """A Clark et al.-style label per head, (layers, heads) of str: the pattern with the largest
    share if it exceeds LABEL_SHARE, else "broad" if entropy_rel > BROAD_ENTROPY, else ""."""
    names = list(_LABELS)
    shares = np.stack([stats[k] for k in names])  # (6, L, H)
    best = shares.argmax(0)
    top = shares.max(0)
    labels = np.full(best.shape, "", dtype=object)
    for idx in np.ndindex(best.shape):
        if top[idx] > LABEL_SHARE:
            labels[idx] = _LABELS[names[best[idx]]]
        elif stats["entropy_rel"][idx] > BROAD_ENTROPY:
            labels[idx] = "broad"
    return labels.astype(str)


def sink_shares(att: Attention, norms: NormWeights | None = None) -> dict[str, dict[str, float]]:
    """Share of all attention (and of the norm-based weight, when given) that lands on [CLS],
    [SEP] and punctuation, averaged over layers, heads and query rows:
    {"attention": {"[CLS]": .., "[SEP]": .., "punctuation": ..}, "norm": {...}}.
    Kobayashi et al. 2020: the norm-based shares are far smaller (these tokens give little)."""
    groups = _token_groups(att)
    names = {"cls": "[CLS]", "sep": "[SEP]", "punct": "punctuation"}

    def shares(w: np.ndarray) -> dict[str, float]:
        w = w / np.maximum(w.sum(-1, keepdims=True), np.finfo(np.float32).tiny)  # rows sum to 1
        return {names[k]: float(w[..., cols].sum(-1).mean()) for k, cols in groups.items()}

    out = {"attention": shares(att.weights)}
    if norms is not None:
        if norms.per_head.shape != att.weights.shape:
            raise ValueError(f"norm weights {norms.per_head.shape} do not match attention {att.weights.shape}")
        out["norm"] = shares(norms.per_head)
    return out


# ---------------------------------------------------------------- minimal pairs


@dataclass(frozen=True, eq=False)
class MinimalPair:
    """How one changed word moves the attention of `query` over `keys`, per layer and head.

    diff:   (layers, heads, len(keys)) float32, att_b[l, h, query, key] - att_a[l, h, query, key].
    score:  (layers, heads): diff[..., -1] - diff[..., 0] with two or more keys (how far b moves
            the query's weight from the first key towards the last), diff[..., 0] with one.
    ranked: (layer, head) pairs, largest score first.
    """

    query: int
    keys: list[int]
    tokens_a: list[str]
    tokens_b: list[str]
    diff: np.ndarray
    score: np.ndarray
    ranked: list[tuple[int, int]]


def find_token(att: Attention, word: str, occurrence: int = 0) -> int:
    """Index of the `occurrence`-th token equal to `word` (case-insensitive); ValueError if none."""
    hits = [i for i, t in enumerate(att.tokens) if t.casefold() == word.strip().casefold()]
    if occurrence >= len(hits) or occurrence < -len(hits):
        raise ValueError(f"token {word!r} (occurrence {occurrence}) not among {att.tokens}")
    return hits[occurrence]


def minimal_pair(att_a: Attention, att_b: Attention, query: int | str, keys: Sequence[int | str]) -> MinimalPair:
    """Compare two texts of equal token length that differ in one word ("tired" / "wide"):
    which heads move `query`'s attention between `keys`? Strings are looked up in att_a."""
    if att_a.weights.shape != att_b.weights.shape:
        if att_a.n != att_b.n:
            raise ValueError(
                f"a minimal pair needs texts of equal token length: {att_a.n} and {att_b.n} tokens; "
                "change one word for another that is a single token too"
            )
        raise ValueError(f"attention shapes differ: {att_a.weights.shape} and {att_b.weights.shape}")
    q = find_token(att_a, query) if isinstance(query, str) else int(query)
    ks = [find_token(att_a, k) if isinstance(k, str) else int(k) for k in keys]
    if not ks:
        raise ValueError("give at least one key token")
    for i in (q, *ks):
        if not 0 <= i < att_a.n:
            raise IndexError(f"token {i} out of range 0..{att_a.n - 1}")
    diff = att_b.weights[:, :, q, ks] - att_a.weights[:, :, q, ks]  # (L, H, K)
    score = diff[..., -1] - diff[..., 0] if len(ks) > 1 else diff[..., 0]
    order = np.argsort(-score, axis=None, kind="stable")
    ranked = [(int(layer), int(head)) for layer, head in zip(*np.unravel_index(order, score.shape), strict=True)]
    return MinimalPair(q, ks, list(att_a.tokens), list(att_b.tokens), diff, score, ranked)
