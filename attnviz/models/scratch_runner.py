"""The from-scratch encoder of scratch.py behind the Runner seam, with the embedded model's tokenizer."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import torch

from ..scratch import EncoderLayer, LayerParts, ScratchEncoder
from .base import Inputs, RunnerBase

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


class ScratchModel(RunnerBase):
    """A `ScratchEncoder` (plain torch ops) carrying MiniLM's weights or random ones."""

    def __init__(
        self,
        encoder: ScratchEncoder,
        tokenizer: PreTrainedTokenizerBase,
        device: torch.device,
        max_tokens: int,
        name: str,
    ):
        super().__init__(tokenizer, device, max_tokens, encoder.cfg.max_positions)
        self.name = name
        self.encoder = encoder
        self.config = encoder.cfg
        self.n_layers = encoder.cfg.n_layers
        self.n_heads = encoder.cfg.n_heads
        self.causal = encoder.cfg.causal

    def attention_maps(self, inputs: Inputs) -> list[torch.Tensor]:
        _, maps = self.encoder(inputs["input_ids"], inputs.get("attention_mask"), inputs.get("token_type_ids"))
        return maps

    def last_hidden(self, inputs: Inputs, inputs_embeds: torch.Tensor | None = None) -> torch.Tensor:
        ids = None if inputs_embeds is not None else inputs["input_ids"]
        hidden, _ = self.encoder(ids, inputs.get("attention_mask"), inputs.get("token_type_ids"), inputs_embeds)
        return hidden

    def hidden_states(self, inputs: Inputs) -> list[torch.Tensor]:
        x = self.encoder.embed(inputs["input_ids"], inputs.get("token_type_ids"))
        states = [x]
        for layer in self.encoder.layers:
            x, _ = layer(x, inputs.get("attention_mask"))
            states.append(x)
        return states

    def input_embeddings(self) -> torch.nn.Embedding:
        return self.encoder.word_embeddings

    def layers(self) -> list[LayerParts]:
        return [cast(EncoderLayer, layer).parts() for layer in self.encoder.layers]
