"""The parts of one pre-norm decoder layer (Llama family: mid = x + o_proj(attention(norm_attention(x))),
out = mid + mlp(norm_ff(mid))), handed out by `Runner.prenorm_layers()` as `scratch.LayerParts` are
for post-LN encoders. Grouped-query attention (Ainslie et al. 2023): query head h reads key/value
head h // (n_heads / n_kv_heads), as transformers' `repeat_kv` lays them out.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


class NoFeedForward(nn.Module):
    """The feed-forward of an attention-only block (the Training lab's, without MLP): adds nothing."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)


@dataclass(frozen=True, eq=False)
class PreNormParts:
    norm_attention: nn.Module  # RMSNorm on the layer's input (Llama: input_layernorm)
    query: nn.Linear  # d -> n_heads * head_dim
    key: nn.Linear  # d -> n_kv_heads * head_dim
    value: nn.Linear  # d -> n_kv_heads * head_dim
    output: nn.Linear  # n_heads * head_dim -> d
    norm_ff: nn.Module  # RMSNorm before the feed-forward (Llama: post_attention_layernorm)
    mlp: nn.Module  # the feed-forward block on (..., d)
    n_heads: int
    n_kv_heads: int
    head_dim: int

    @property
    def kv_heads(self) -> list[int]:
        """The key/value head each query head reads."""
        group = self.n_heads // self.n_kv_heads
        return [h // group for h in range(self.n_heads)]
