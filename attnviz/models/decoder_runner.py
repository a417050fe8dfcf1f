"""What a runner answers about decoder internals when it has none: the defaults RunnerBase
inherits (kept apart so base.py stays small). PretrainedModel overrides both for the Llama family."""

from __future__ import annotations

import torch

from .prenorm_parts import PreNormParts


class DecoderDefaults:
    name: str

    def prenorm_layers(self) -> list[PreNormParts]:
        """Each layer's parts of a pre-norm decoder (Llama family). ValueError for other layouts."""
        raise ValueError(f"model '{self.name}' is not a pre-norm decoder of the Llama family (Llama, Qwen2, SmolLM2)")

    def unembed(self, hidden: torch.Tensor) -> torch.Tensor:
        """A causal LM's logits (..., vocab) from final hidden states (..., d), as `last_hidden`
        returns them (after the final norm). ValueError without a language-model head."""
        raise ValueError(f"model '{self.name}' has no language-model head: the next word needs a decoder")
