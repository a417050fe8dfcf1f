"""The query-key atlas of one head (AttentionViz, Yeh et al. 2023): the query and key vector of
every token of a corpus, projected together to two dimensions.

Keys are shifted so their centroid meets the queries' and both are scaled to the same mean norm;
neither changes attention (a shift c adds q.c to every score of query q, which softmax ignores).
PCA always works; t-SNE (scikit-learn) and UMAP (umap-learn) when installed, slow on a CPU.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..models import Runner
from ..models.tokens import count_tokens, token_limit
from .batch import Item, batches, encode_all, padded

DEFAULT_MAX_POINTS = 20_000  # queries + keys; Scattergl stays fluid at this size in a browser
METHOD_LIMITS = {"pca": 200_000, "tsne": 5_000, "umap": 50_000}  # points each method is given at most


@dataclass(frozen=True)
class Atlas:
    """Points of one head's atlas: the m queries first, then the m keys of the same tokens."""

    layer: int
    head: int
    method: str
    xy: np.ndarray  # (2m, 2) float32
    is_key: np.ndarray  # (2m,) bool
    row: np.ndarray  # (2m,) int: which of `texts` the token comes from
    position: np.ndarray  # (2m,) int: the token's position in its text
    relative: np.ndarray  # (2m,) float32: position / (n - 1), 0 at the start, 1 at the end
    tokens: list[str]  # (m,) the token of each query (and of the key at the same index + m)
    special: np.ndarray  # (m,) bool
    texts: list[str]  # the texts the points come from
    capped: bool  # whether the texts were cut to keep within max_points

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)


def methods() -> list[str]:
    """The projections available here: "pca", and "tsne" / "umap" when their package is installed."""
    optional = (("tsne", "sklearn"), ("umap", "umap"))
    return ["pca", *(name for name, package in optional if importlib.util.find_spec(package) is not None)]


@dataclass(frozen=True)
class _Where:
    """Where each of the m tokens comes from, as the fields of `Atlas` say (one copy, not two)."""

    row: np.ndarray
    position: np.ndarray
    relative: np.ndarray
    tokens: list[str]
    special: np.ndarray


def query_key_vectors(
    runner: Runner,
    texts: Sequence[str],
    layer: int,
    head: int,
    *,
    max_tokens: int = 128,
    batch_size: int = 32,
    progress: Callable[[float], None] | None = None,
) -> tuple[np.ndarray, np.ndarray, _Where]:
    """Queries and keys (m, head_dim) float32 of every token of `texts` at (layer, head), in
    text order, and where each comes from."""
    if not (0 <= layer < runner.n_layers and 0 <= head < runner.n_heads):
        raise IndexError(f"head ({layer}, {head}) outside {runner.n_layers} layers x {runner.n_heads} heads")
    parts = runner.layers()[layer]  # ValueError for models that do not expose their layers
    sl = slice(head * parts.head_dim, (head + 1) * parts.head_dim)
    limit = token_limit(max_tokens, runner.max_tokens)
    items = encode_all(runner, texts, limit)
    found: dict[int, tuple[np.ndarray, np.ndarray, Item]] = {}  # text index -> its queries, keys (n, head_dim)
    plan = batches(items, batch_size, 1)
    for batch in plan:
        live = [it for i in batch if (it := items[i]) is not None]
        with runner.gate.background(), torch.inference_mode():
            x = runner.hidden_states(padded(runner, live))[layer]  # (B, w, d)
            q, k = parts.query(x)[..., sl].float().cpu().numpy(), parts.key(x)[..., sl].float().cpu().numpy()
        for j, (i, it) in enumerate(zip(batch, live, strict=True)):
            found[i] = (q[j, : it.n], k[j, : it.n], it)
        if progress is not None:
            progress(len(found) / sum(map(len, plan)))  # texts analysed of those to analyse
    texts_done = sorted(found)  # text order, not the batches'
    kept = [found[i] for i in texts_done]
    sizes = [it.n for _, _, it in kept]
    where = _Where(
        row=np.repeat(np.array(texts_done, dtype=np.int64), sizes),
        position=np.concatenate([np.arange(n) for n in [0, *sizes]]),
        relative=np.concatenate([np.arange(n, dtype=np.float32) / max(n - 1, 1) for n in [0, *sizes]]),
        tokens=[tok for _, _, it in kept for tok in it.tokens],
        special=np.concatenate([np.zeros(0, bool), *(it.special for _, _, it in kept)]),
    )
    empty = np.zeros((0, parts.head_dim), np.float32)
    queries = np.concatenate([empty, *(q for q, _, _ in kept)])
    return queries, np.concatenate([empty, *(k for _, k, _ in kept)]), where


def align(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AttentionViz's normalisation (module docstring); attention is unchanged."""
    if len(q) == 0:
        return q, k
    k = k - k.mean(0) + q.mean(0)
    nq, nk = float(np.linalg.norm(q, axis=1).mean()), float(np.linalg.norm(k, axis=1).mean())
    a = np.sqrt(nk / nq) if nq > 0 and nk > 0 else 1.0
    return (q * a).astype(np.float32), (k / a).astype(np.float32)


def project(points: np.ndarray, method: str = "pca", seed: int = 0) -> np.ndarray:
    """(N, d) -> (N, 2) float32. PCA: the two leading principal components (signs fixed so the
    largest loading is positive, for the same picture every time); t-SNE or UMAP on request."""
    if method not in METHOD_LIMITS:
        raise ValueError(f"unknown projection {method!r}: use one of {', '.join(methods())}")
    if method not in methods():
        raise ValueError(f"projection {method!r} needs its package (scikit-learn for tsne, umap-learn for umap)")
    n = len(points)
    if n > METHOD_LIMITS[method]:
        raise ValueError(f"{n:,} points is too many for {method} (at most {METHOD_LIMITS[method]:,})")
    if n < 3:
        return np.zeros((n, 2), dtype=np.float32)
    x = points.astype(np.float64)
    if method == "pca":
        x = x - x.mean(0)
        _, _, vt = np.linalg.svd(x, full_matrices=False)
        axes = vt[:2] * np.sign(vt[:2][np.arange(2), np.abs(vt[:2]).argmax(1)])[:, None]
        return (x @ axes.T).astype(np.float32)
    if method == "tsne":
        from sklearn.manifold import TSNE

        tsne = TSNE(n_components=2, init="pca", random_state=seed, perplexity=min(30.0, (n - 1) / 3))
        return np.asarray(tsne.fit_transform(x), dtype=np.float32)
    import umap

    return np.asarray(umap.UMAP(n_components=2, random_state=seed).fit_transform(x), dtype=np.float32)


def atlas(
    runner: Runner,
    texts: Sequence[str],
    layer: int,
    head: int,
    *,
    method: str = "pca",
    max_points: int = DEFAULT_MAX_POINTS,
    max_tokens: int = 128,
    progress: Callable[[float], None] | None = None,
) -> Atlas:
    """The atlas of head (layer, head) over `texts`, in order until the queries and keys of
    their tokens would pass `max_points` (and the method's own limit)."""
    budget = min(max_points, METHOD_LIMITS.get(method, max_points))
    limit = token_limit(max_tokens, runner.max_tokens)
    kept: list[str] = []
    points = 0
    for text in texts:
        n = min(limit, count_tokens(runner.tokenizer, text))
        if points + 2 * n > budget and kept:
            break
        kept.append(text)
        points += 2 * n
    q, k, v = query_key_vectors(runner, kept, layer, head, max_tokens=max_tokens, progress=progress)
    q, k = align(q, k)
    xy = project(np.concatenate([q, k]), method)
    return Atlas(
        layer=layer,
        head=head,
        method=method,
        xy=xy,
        is_key=np.repeat([False, True], len(q)),
        row=np.tile(v.row, 2),
        position=np.tile(v.position, 2),
        relative=np.tile(v.relative, 2),
        tokens=v.tokens,
        special=v.special,
        texts=kept,
        capped=len(kept) < len(texts),
    )
