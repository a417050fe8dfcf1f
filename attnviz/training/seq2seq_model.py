"""A tiny encoder-decoder (Vaswani et al. 2017) built from the project's own attention.

    encoder block  x = x + SelfAttn(LN(x));            x = x + MLP(LN(x))
    decoder block  y = y + CausalSelfAttn(LN(y));
                   y = y + CrossAttn(LN(y), memory);   y = y + MLP(LN(y))

Cross-attention is scratch's `MultiHeadSelfAttention` given a `memory`: queries from the decoder's
stream, keys and values from the encoder's output.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..scratch import MultiHeadSelfAttention
from .model import PreNormBlock, check_heads, mlp


@dataclass(frozen=True)
class Seq2SeqConfig:
    vocab_size: int
    src_len: int
    tgt_len: int
    d_model: int = 64
    n_heads: int = 2
    enc_layers: int = 1
    dec_layers: int = 1

    def __post_init__(self) -> None:
        check_heads(self.d_model, self.n_heads)


@dataclass(frozen=True)
class Maps:
    """Each layer's weights: encoder (B, H, S, S), decoder (B, H, T, T), cross (B, H, T, S)."""

    encoder: list[torch.Tensor]
    decoder: list[torch.Tensor]
    cross: list[torch.Tensor]


class DecoderBlock(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        self.ln1, self.ln2, self.ln3 = (nn.LayerNorm(cfg.d_model) for _ in range(3))
        self.attention = MultiHeadSelfAttention(cfg.d_model, cfg.n_heads)
        self.cross = MultiHeadSelfAttention(cfg.d_model, cfg.n_heads)
        self.mlp = mlp(cfg.d_model)

    def forward(self, y: torch.Tensor, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        a, self_w = self.attention(self.ln1(y), causal=True)
        y = y + a
        c, cross_w = self.cross(self.ln2(y), memory=memory)  # (B, T, d), (B, H, T, S)
        y = y + c
        return y + self.mlp(self.ln3(y)), self_w, cross_w


class Seq2Seq(nn.Module):
    """Token and learned position embeddings (one table each for source and target positions),
    the blocks, a final LayerNorm on each side and an unembedding."""

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        self.cfg = cfg
        self.token_embeddings = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.src_positions = nn.Embedding(cfg.src_len, cfg.d_model)
        self.tgt_positions = nn.Embedding(cfg.tgt_len, cfg.d_model)
        self.encoder = nn.ModuleList(PreNormBlock(cfg.d_model, cfg.n_heads) for _ in range(cfg.enc_layers))
        self.decoder = nn.ModuleList(DecoderBlock(cfg) for _ in range(cfg.dec_layers))
        self.ln_memory, self.ln_final = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.unembed = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """src (B, S) -> (memory (B, S, d), encoder weights per layer)."""
        x = self.token_embeddings(src) + self.src_positions(torch.arange(src.shape[1]))[None]
        maps = []
        for block in self.encoder:
            x, w = block(x)
            maps.append(w)
        return self.ln_memory(x), maps

    def decode(
        self, memory: torch.Tensor, dec_in: torch.Tensor
    ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """(logits (B, T, vocab), decoder self-attention and cross-attention weights per layer)."""
        y = self.token_embeddings(dec_in) + self.tgt_positions(torch.arange(dec_in.shape[1]))[None]
        self_maps, cross_maps = [], []
        for block in self.decoder:
            y, sw, cw = block(y, memory)
            self_maps.append(sw)
            cross_maps.append(cw)
        return self.unembed(self.ln_final(y)), self_maps, cross_maps

    def forward(self, src: torch.Tensor, dec_in: torch.Tensor) -> tuple[torch.Tensor, Maps]:
        memory, enc_maps = self.encode(src)
        logits, self_maps, cross_maps = self.decode(memory, dec_in)
        return logits, Maps(enc_maps, self_maps, cross_maps)

    @torch.no_grad()
    def generate(self, src: torch.Tensor, length: int, bos: int = 2) -> tuple[torch.Tensor, Maps]:
        """Greedy decoding of `length` tokens (B, length), and the maps of the last pass (which
        reads what the model itself wrote)."""
        memory, enc_maps = self.encode(src)
        out = torch.full((src.shape[0], 1), bos, dtype=torch.long)
        for _ in range(length):
            logits, self_maps, cross_maps = self.decode(memory, out)
            out = torch.cat([out, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        return out[:, 1:], Maps(enc_maps, self_maps, cross_maps)
