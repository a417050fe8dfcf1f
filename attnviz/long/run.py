"""`attend_long`: one memory-efficient forward of a long text, and what it would cost.

ATTNVIZ_LONG_TOKENS=N    most tokens the long mode reads (default 8192, demo 2048)
ATTNVIZ_LONG_HEAD_MB=N   largest single full map `LongAttention.head` returns (default 1024, demo 64)
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from ..config import env_flag, env_int
from ..models.base import Encoded, kv_shape
from ..models.scratch_runner import ScratchModel
from ..models.tokens import model_limit, token_limit
from .attention import Cancel, LongAttention, check_cancel
from .capture import run_hf, run_scratch

Progress = Callable[[int, int], None]  # (layers done, layers)


@dataclass(frozen=True)
class LongSettings:
    max_tokens: int = 8192
    head_mb: int = 1024


def long_settings() -> LongSettings:
    demo = env_flag(os.environ, "ATTNVIZ_DEMO")
    return LongSettings(
        max_tokens=env_int(os.environ, "ATTNVIZ_LONG_TOKENS", 2048 if demo else 8192, 2),
        head_mb=env_int(os.environ, "ATTNVIZ_LONG_HEAD_MB", 64 if demo else 1024, 1),
    )


@dataclass(frozen=True)
class Estimate:
    """What a text of n tokens costs in this model: the full maps of every head (what eager
    attention would return) against the queries and keys the long mode keeps."""

    n: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int

    @property
    def full_bytes(self) -> int:
        return self.layers * self.heads * self.n * self.n * 4

    @property
    def kept_bytes(self) -> int:
        return self.layers * (self.heads + self.kv_heads) * self.n * self.head_dim * 4

    @property
    def head_bytes(self) -> int:
        return self.n * self.n * 4


def longest(model: Any, max_tokens: int | None = None) -> int:
    """The most tokens `attend_long` reads with this model: the model's limit (a scratch encoder's
    position table), the setting, the ask."""
    cfg = model.config
    positions = int(cfg.max_positions) if isinstance(model, ScratchModel) else model_limit(model.tokenizer, cfg)
    return token_limit(max_tokens, min(positions, long_settings().max_tokens))


def estimate(model: Any, n: int) -> Estimate:
    n_kv, head_dim = kv_shape(model)
    return Estimate(n=n, layers=model.n_layers, heads=model.n_heads, kv_heads=n_kv, head_dim=head_dim)


def encode_long(model: Any, text: str, max_tokens: int | None = None) -> Encoded:
    """Tokenise up to `longest(model, max_tokens)` tokens (past the runner's everyday limit)."""
    limit = longest(model, max_tokens)
    wide = copy.copy(model)  # shares everything; only its limit differs
    wide.max_tokens = limit
    return wide.encode(text, limit)


def attend_long(
    model: Any,
    text: str,
    max_tokens: int = 8192,
    *,
    cancel: Cancel = None,
    progress: Progress | None = None,
    head_limit_mb: int | None = None,
) -> LongAttention:
    """Run `text` (up to `max_tokens` tokens, within the model's limit and ATTNVIZ_LONG_TOKENS)
    through `model` with SDPA, keeping each layer's queries and keys; no map is built.
    `cancel` (an Event, or a callable answering True to stop) is checked before each layer and
    raises `Cancelled`; `progress(layers done, layers)` follows the layers."""
    enc = encode_long(model, text, max_tokens)
    n_layers = model.n_layers

    def check(done: int) -> None:
        if progress is not None:
            progress(done, n_layers)
        check_cancel(cancel)

    check(0)
    hf = getattr(model, "hf_model", None)
    if not isinstance(model, ScratchModel) and hf is None:
        raise ValueError(f"model '{model.name}' has no long mode (a Hugging Face model or the scratch encoder has)")
    with model.gate.interactive():
        if isinstance(model, ScratchModel):
            kept = run_scratch(model.encoder, model.layers(), enc.inputs, check)
        else:
            kept = run_hf(hf, enc.inputs, check)
    if len(kept.queries) != n_layers:
        raise ValueError(f"model '{model.name}' ran {len(kept.queries)} of its {n_layers} layers in the long mode")
    if progress is not None:
        progress(n_layers, n_layers)
    return LongAttention(
        tokens=enc.tokens,
        model=model.name,
        causal=bool(model.causal),
        queries=kept.queries,
        keys=kept.keys,
        scaling=kept.scaling,
        head_limit_bytes=(long_settings().head_mb if head_limit_mb is None else head_limit_mb) * 2**20,
        special=enc.special,
        spans=enc.spans,
        text=enc.text,
        truncated=enc.truncated,
        n_input_tokens=enc.n_input_tokens,
    )


def scratch_model(max_positions: int = 8192, seed: int = 0, **shape: int) -> ScratchModel:
    """The scratch encoder at any length: MiniLM's tokenizer and shape (or `shape`: n_layers,
    n_heads, d_model, d_ff), untrained weights (`seed`), fixed sinusoidal positions for
    `max_positions` tokens."""
    from transformers import AutoTokenizer

    from ..models import embedded_model_dir
    from ..models.minilm_quick import scratch_config
    from ..scratch import ScratchEncoder

    folder = embedded_model_dir()
    cfg = replace(scratch_config(folder), max_positions=max_positions, sinusoidal=True, **shape)  # type: ignore[arg-type]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        encoder = ScratchEncoder(cfg).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    return ScratchModel(
        encoder, tokenizer, torch.device("cpu"), max_positions, f"scratch (random weights, seed {seed})"
    )
