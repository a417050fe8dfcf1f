"""What runs a decoder one step at a time for `generate`: over a Hugging Face model's KV cache
(`Cached`: the new positions only, every earlier key and value kept), or, for the training
lab's decoders that keep no cache, the whole sequence again each step (`Recomputed`).

Both answer `feed(ids)` with the logits (vocab,) after the last fed position and the attention
rows of the fed positions over every position so far, `fork(n)` with an engine that holds the
first n positions (the branch point) and leaves this one as it is, and `cache_bytes(n)` with
what a KV cache of n positions holds, grouped and as if each query head kept its own."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from ..models.base import kv_shape
from ..models.threads import cpu_threads_for


def engine_for(runner: Any) -> Engine:
    """The engine of a causal model with a language-model head; ValueError for any other."""
    if not getattr(runner, "causal", False):
        raise ValueError(f"model '{runner.name}' is not a causal decoder: only a decoder such as 'smollm2' writes")
    if getattr(runner, "hf_model", None) is not None:
        if getattr(runner, "lm_head", None) is None:
            raise ValueError(f"model '{runner.name}' has no language-model head: it cannot choose a next token")
        return Cached(runner)
    if getattr(runner, "decoder", None) is not None:
        return Recomputed(runner)
    raise ValueError(f"model '{runner.name}' cannot write: it is neither a Hugging Face decoder nor a trained one")


def _kv_bytes(runner: Any, weights: torch.nn.Module, positions: int) -> tuple[int, int]:
    """Keys and values (2) of every layer, head and position, in the dtype of `weights`:
    (grouped, one pair per query head)."""
    kv_heads, head_dim = kv_shape(runner)
    per_head = runner.n_layers * head_dim * 2 * next(weights.parameters()).element_size() * positions
    return per_head * kv_heads, per_head * int(runner.n_heads)


class Cached:
    """A Hugging Face decoder (its base model and LM head, as the runner holds them) over a
    transformers DynamicCache."""

    def __init__(self, runner: Any, cache: Any = None) -> None:
        self.runner = runner
        self.cache = cache

    @property
    def positions(self) -> int:
        return 0 if self.cache is None else int(self.cache.get_seq_length())

    def feed(self, ids: list[int], rows: bool = True) -> tuple[torch.Tensor, np.ndarray | None]:
        """Run `ids` after the cached positions; rows: (layers, heads, len(ids), positions) float32."""
        r = self.runner
        inputs = torch.tensor([ids], dtype=torch.long, device=r.device)
        mask = torch.ones((1, self.positions + len(ids)), dtype=torch.long, device=r.device)
        with r.gate.interactive(), torch.inference_mode(), cpu_threads_for(len(ids), r.device):
            out = r.hf_model(
                input_ids=inputs, attention_mask=mask, cache=self.cache, use_cache=True,
                output_attentions=rows, return_dict=True,
            )  # fmt: skip
            logits = r.unembed(out.last_hidden_state[0, -1]).float().cpu()
            maps = None
            if rows:
                if not out.attentions or any(a is None for a in out.attentions):
                    raise ValueError(f"model '{r.name}' returned no attention weights (it needs eager attention)")
                maps = torch.stack([a[0] for a in out.attentions]).float().cpu().numpy()
        self.cache = out.cache
        return logits, maps

    def fork(self, positions: int) -> Engine:
        """An engine over the first `positions` cached positions: the layers' tensors are shared
        (crop slices them; a later step concatenates into new tensors, never writes in place)."""
        if not 0 <= positions <= self.positions:
            raise ValueError(f"cannot fork at {positions} of {self.positions} cached positions")
        if self.cache is None or positions == 0:
            return Cached(self.runner)
        cache = copy.copy(self.cache)
        cache.layers = [copy.copy(layer) for layer in self.cache.layers]
        cache.crop(positions - self.positions)  # transformers 5: minus the tokens to drop
        return Cached(self.runner, cache)

    def cache_bytes(self, positions: int) -> tuple[int, int]:
        return _kv_bytes(self.runner, self.runner.hf_model, positions)

    def tensors(self) -> list[torch.Tensor]:
        """The cache's key and value tensors, every layer (what `cache_bytes` counts)."""
        if self.cache is None:
            return []
        return [t for layer in self.cache.layers for t in (layer.keys, layer.values)]


class Recomputed:
    """A decoder trained in the training lab (`training.TrainedModel`): no cache, so every step
    runs the whole sequence so far again (cheap at its size: a few layers of width 64). Its
    `cache_bytes` say what a cache of its keys and values would hold."""

    def __init__(self, runner: Any, ids: list[int] | None = None) -> None:
        self.runner = runner
        self.ids = list(ids or [])

    @property
    def positions(self) -> int:
        return len(self.ids)

    def feed(self, ids: list[int], rows: bool = True) -> tuple[torch.Tensor, np.ndarray | None]:
        r = self.runner
        self.ids += list(ids)
        inputs = torch.tensor([self.ids], dtype=torch.long, device=r.device)
        with r.gate.interactive(), torch.inference_mode():
            logits, maps = r.decoder(inputs)  # (1, n, vocab), layers x (1, heads, n, n)
        weights = torch.stack([m[0, :, -len(ids) :] for m in maps]).float().cpu().numpy() if rows else None
        return logits[0, -1].float().cpu(), weights

    def fork(self, positions: int) -> Engine:
        if not 0 <= positions <= self.positions:
            raise ValueError(f"cannot fork at {positions} of {self.positions} positions")
        return Recomputed(self.runner, self.ids[:positions])

    def cache_bytes(self, positions: int) -> tuple[int, int]:
        return _kv_bytes(self.runner, self.runner.decoder, positions)


Engine = Cached | Recomputed  # what `engine_for` gives: the interface the module docstring names
