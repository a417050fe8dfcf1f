"""A tiny Llama with grouped heads (4 query heads reading 2 key/value heads), built and saved
locally for the decoder evidence tests (no downloads); `bias=True` gives q/k/v/o biases."""

from __future__ import annotations

from pathlib import Path

import torch

import attnviz

from .tiny_models import _byte_bpe


def build_llama(
    folder: Path, *, bias: bool = False, layers: int = 2, positions: int = 64, init: float = 0.3, seed: int = 0
) -> Path:
    """A tiny Llama (4 query heads sharing 2 key/value heads, rotary) saved with its byte-level
    tokenizer. `init`: the weights' spread (0.3: heads differ and attention is not flat; 0.02 is
    transformers' default)."""
    from transformers import GPT2TokenizerFast, LlamaConfig, LlamaForCausalLM

    tok = _byte_bpe(folder, GPT2TokenizerFast, bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tok),  # type: ignore[arg-type]
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=positions,
        tie_word_embeddings=False,
        attention_bias=bias,
        initializer_range=init,
    )
    LlamaForCausalLM(cfg).save_pretrained(str(folder))
    tok.save_pretrained(str(folder))  # type: ignore[attr-defined]
    return folder


def load_llama(folder: Path) -> attnviz.PretrainedModel:
    model = attnviz.load_model(str(folder), device="cpu")
    assert isinstance(model, attnviz.PretrainedModel)
    return model
