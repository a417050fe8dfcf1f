"""The per-batch function both engines run: texts in, per-head statistics out.

Texts run sorted by length in padded batches in the model's background lane (a visitor's pass
goes first). The statistics of `explain.head_stats` (Clark et al. 2019) are computed for the
whole batch with padding masked out, so each sentence gets what `head_stats(runner.attend(text))`
gives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ..explain.heads import ENTROPY_SMOOTHING, _is_punctuation
from ..models import Runner
from ..models.tokens import token_limit

# The statistics of explain.head_stats, in the order of its docstring.
STATS = ("entropy", "entropy_rel", "self", "prev", "next", "cls", "sep", "punct")
# A padded batch keeps at most this many attention entries (batch x layers x heads x n x n,
# float32: 128 MB) alive at once; long texts go through in smaller batches.
ENTRY_BUDGET = 2**25


@dataclass
class Analysis:
    """What `analyse` found for each text, in order; a skipped text has `skip`, NaN statistics."""

    tokens: list[list[str] | None]
    truncated: list[bool]
    skip: list[str | None]
    stats: dict[str, np.ndarray]  # name -> (texts, layers, heads) float32
    weights: list[np.ndarray | None] = field(default_factory=list)  # with keep_weights: (L, H, n, n)


@dataclass
class Item:
    ids: dict[str, list[int]]  # input_ids, attention_mask, maybe token_type_ids
    tokens: list[str]
    special: np.ndarray
    truncated: bool

    @property
    def n(self) -> int:
        return len(self.tokens)


def analyse(
    runner: Runner,
    texts: Sequence[str],
    *,
    max_tokens: int | None = None,
    batch_size: int = 32,
    progress: Callable[[int], None] | None = None,
    keep_weights: bool = False,
) -> Analysis:
    """Per-head statistics of each text. `progress(done)` is called after every padded batch
    with the number of texts finished so far; it may raise to stop the work there."""
    limit = token_limit(max_tokens, runner.max_tokens)
    items = encode_all(runner, texts, limit)
    L, H = runner.n_layers, runner.n_heads
    stats = {name: np.full((len(texts), L, H), np.nan, dtype=np.float32) for name in STATS}
    weights: list[np.ndarray | None] = [None] * len(texts)
    done = 0
    for batch in batches(items, batch_size, L * H):
        live = [it for i in batch if (it := items[i]) is not None]
        with runner.gate.background(), torch.inference_mode():
            maps = runner.attention_maps(padded(runner, live))  # one (B, H, w, w) tensor a layer
            if not maps or any(m is None for m in maps):
                raise ValueError(f"model '{runner.name}' returned no attention weights")
            per_layer = [_layer_stats(m, live) for m in maps]
        values = torch.stack(per_layer, dim=2).numpy()  # (stats, B, L, H)
        for k, name in enumerate(STATS):
            stats[name][batch] = values[k]
        if keep_weights:
            stacked = torch.stack(maps, dim=1).float().cpu()  # (B, L, H, w, w)
            for b, (i, it) in enumerate(zip(batch, live, strict=True)):
                weights[i] = stacked[b, :, :, : it.n, : it.n].contiguous().numpy()
        done += len(batch)
        if progress is not None:
            progress(done)
    return Analysis(
        tokens=[None if it is None else it.tokens for it in items],
        truncated=[bool(it is not None and it.truncated) for it in items],
        skip=[None if it is not None else "no_tokens" for it in items],
        stats=stats,
        weights=weights if keep_weights else [],
    )


def encode_all(runner: Runner, texts: Sequence[str], limit: int) -> list[Item | None]:
    """Each text through `Runner.encode`; None for a text the runner refuses (no token it knows)."""
    out: list[Item | None] = []
    for text in texts:
        try:
            enc = runner.encode(text, limit)
        except ValueError:
            out.append(None)
            continue
        ids = {k: v[0].tolist() for k, v in enc.inputs.items()}
        out.append(Item(ids, enc.tokens, enc.special, enc.truncated))
    return out


def batches(items: list[Item | None], batch_size: int, maps_per_item: int) -> list[list[int]]:
    """Indices of the texts to analyse, shortest first, in batches of at most `batch_size`
    whose padded attention stays within ENTRY_BUDGET."""
    lengths = {i: it.n for i, it in enumerate(items) if it is not None}
    batches: list[list[int]] = []
    current: list[int] = []
    for i in sorted(lengths, key=lengths.__getitem__):
        width = lengths[i]  # the longest so far: sorted ascending
        if current and (
            len(current) >= batch_size or (len(current) + 1) * maps_per_item * width * width > ENTRY_BUDGET
        ):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def padded(runner: Runner, items: list[Item]) -> dict[str, torch.Tensor]:
    """The model inputs of a right-padded batch: (B, w) tensors on the model's device."""
    width = max(it.n for it in items)
    pad_id = getattr(runner.tokenizer, "pad_token_id", None) or 0
    inputs = {}
    for name in items[0].ids:
        fill = pad_id if name == "input_ids" else 0
        rows = [it.ids[name] + [fill] * (width - it.n) for it in items]
        inputs[name] = torch.tensor(rows, dtype=torch.long, device=runner.device)  # (B, w)
    return inputs


def _layer_stats(a: torch.Tensor, items: list[Item]) -> torch.Tensor:
    """One layer's statistics for a padded batch a (B, H, w, w): (len(STATS), B, H) on the CPU.
    Entropy is smoothed as in explain.head_stats: p = c (A + eps) with c = 1 / (1 + n eps)."""
    w = a.shape[-1]
    a = a.float()
    dev = a.device
    zero = torch.zeros((), device=dev)
    n = torch.tensor([it.n for it in items], dtype=torch.float32, device=dev)  # (B,)
    valid = torch.arange(w, device=dev)[None, :] < n[:, None]  # (B, w)
    cell = valid[:, None, :, None] & valid[:, None, None, :]  # (B, 1, w, w)
    eps = ENTROPY_SMOOTHING
    q = a + eps
    qlogq = torch.where(cell, q * torch.log(q), zero).sum((-1, -2))  # (B, H)
    c = 1.0 / (1.0 + n * eps)
    entropy = -(torch.log(c)[:, None] + c[:, None] * qlogq / n[:, None])  # (B, H)
    log_n = torch.log(n).clamp_min(1e-12)[:, None]
    entropy_rel = torch.where(n[:, None] > 1, entropy / log_n, zero)
    rows = torch.where(cell, a, zero)  # padding rows and columns out
    received = rows.sum(-2) / n[:, None, None]  # (B, H, w): mean attention each column receives
    # (3, B, w) indicators of the [CLS] column (the first special token), the [SEP] columns (the
    # other special tokens) and punctuation columns, as explain.heads groups them
    groups = np.zeros((3, len(items), w), dtype=np.float32)
    for b, it in enumerate(items):
        specials = np.flatnonzero(it.special)
        groups[0, b, specials[:1]] = 1.0
        groups[1, b, specials[1:]] = 1.0
        punct = [i for i, t in enumerate(it.tokens) if not it.special[i] and _is_punctuation(t)]
        groups[2, b, punct] = 1.0
    cls, sep, punct = ((received * g[:, None, :]).sum(-1) for g in torch.from_numpy(groups).to(dev))
    pairs = (n - 1).clamp_min(1)[:, None]  # (i, i - 1) and (i, i + 1) pairs of valid tokens
    # padding is out of `rows`: its diagonals hold the self, previous and next weights of valid pairs only
    diag, prev, nxt = (torch.diagonal(rows, offset=o, dim1=-2, dim2=-1).sum(-1) for o in (0, -1, 1))
    return torch.stack([entropy, entropy_rel, diag / n[:, None], prev / pairs, nxt / pairs, cls, sep, punct]).cpu()
