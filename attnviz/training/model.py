"""A tiny decoder built from the project's own attention (attnviz/scratch.py), causal mask on:
embeddings (N(0, 1)), blocks x = x + Attn(x) (then x + MLP(x) if asked), a final LayerNorm, an
unembedding. Attention-only without LayerNorm in the blocks, like the toy models where Olsson et
al. (2022) watch induction heads form (the residual stream is a plain sum of what each head
wrote); built GPT-2 style it still learns induction, with smeared heads (bench/results_training.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..lab.sparse import sparse_mask
from ..scratch import MultiHeadSelfAttention


@dataclass(frozen=True)
class DecoderConfig:
    vocab_size: int
    max_len: int  # learned positions; longer input is cut to this many tokens
    d_model: int = 64  # small enough to train in seconds on two CPU cores
    n_layers: int = 2  # two layers: a previous-token head can feed an induction head
    n_heads: int = 2
    mlp: bool = False  # attention-only (Olsson et al. 2022); True adds a 4x GELU MLP a block
    norm: bool = False  # True: a LayerNorm before each attention (GPT-2 style), for comparison only
    embed_std: float = 1.0  # N(0, 1), PyTorch's default; GPT-2 uses 0.02 (compared in the benchmark)
    sparse: str = ""  # "" (every earlier key) or a pattern of attnviz/sparse.py, within the causal mask
    window: int = 3  # the sparse pattern's options (sparse.sparse_mask)
    global_tokens: int = 1
    dilation: int = 2
    random_keys: int = 2
    sparse_seed: int = 0

    def __post_init__(self) -> None:
        check_heads(self.d_model, self.n_heads)


def check_heads(d_model: int, n_heads: int) -> None:
    if d_model % n_heads:
        raise ValueError(f"d_model ({d_model}) must be a multiple of heads ({n_heads})")


def mlp(d: int, width: int = 4) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d, width * d), nn.GELU(), nn.Linear(width * d, d))


class PreNormBlock(nn.Module):
    """x = x + Attn(LN(x)); x = x + MLP(LN(x)), no mask (an encoder's or a ViT's block)."""

    def __init__(self, d_model: int, n_heads: int, width: int = 4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attention = MultiHeadSelfAttention(d_model, n_heads)
        self.mlp = mlp(d_model, width)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, weights = self.attention(self.ln1(x))
        x = x + a
        return x + self.mlp(self.ln2(x)), weights


class DecoderLayer(nn.Module):
    """x = x + Attn(x) under the causal mask; then x = x + MLP(x) if the config says so."""

    def __init__(self, cfg: DecoderConfig):
        super().__init__()
        self.ln_attention = nn.LayerNorm(cfg.d_model) if cfg.norm else nn.Identity()
        self.attention = MultiHeadSelfAttention(cfg.d_model, cfg.n_heads)
        self.mlp = mlp(cfg.d_model) if cfg.mlp else None

    def forward(
        self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, allowed: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x: (B, T, d) -> (x (B, T, d), weights (B, nh, T, T)); `allowed`: a sparse pattern."""
        a, weights = self.attention(self.ln_attention(x), attention_mask, causal=True, allowed=allowed)
        x = x + a
        if self.mlp is not None:
            x = x + self.mlp(x)
        return x, weights


class TinyDecoder(nn.Module):
    def __init__(self, cfg: DecoderConfig):
        super().__init__()
        self.cfg = cfg
        self.token_embeddings = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.position_embeddings = nn.Embedding(cfg.max_len, cfg.d_model)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_layers))
        self.ln_final = nn.LayerNorm(cfg.d_model)
        self.unembed = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.allowed: torch.Tensor | None = None  # (max_len, max_len) bool when the config asks for a sparse pattern
        if cfg.sparse:
            pattern = sparse_mask(cfg.max_len, cfg.sparse, window=cfg.window, global_tokens=cfg.global_tokens,
                                  dilation=cfg.dilation, random_keys=cfg.random_keys, seed=cfg.sparse_seed, causal=True)  # fmt: skip
            self.allowed = torch.as_tensor(pattern)
        if cfg.embed_std != 1.0:
            for emb in (self.token_embeddings, self.position_embeddings):
                nn.init.normal_(emb.weight, std=cfg.embed_std)

    def run(
        self,
        input_ids: torch.Tensor | None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """The residual stream entering each layer plus the last layer's output (L + 1 tensors
        (B, T, d)), and each layer's weights (B, nh, T, T); `inputs_embeds` replaces the token embeddings."""
        if inputs_embeds is None:
            if input_ids is None:
                raise ValueError("give input_ids or inputs_embeds")
            inputs_embeds = self.token_embeddings(input_ids)  # (B, T, d)
        positions = torch.arange(inputs_embeds.shape[1], device=inputs_embeds.device)
        x = inputs_embeds + self.position_embeddings(positions)[None]
        states, maps = [x], []
        for layer in self.layers:
            x, weights = layer(x, attention_mask, self.allowed)
            states.append(x)
            maps.append(weights)
        return states, maps

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Returns (logits (B, T, vocab), one (B, nh, T, T) weight tensor per layer)."""
        states, maps = self.run(input_ids, attention_mask)
        return self.unembed(self.ln_final(states[-1])), maps
