"""transformers' own causal LM around a runner's base model and head, sharing their tensors (no
second copy of the weights): what `generate` is held to in the tests (greedy tokens equal to
`generate(do_sample=False)`) and timed against in bench/generate.py."""

from __future__ import annotations

from typing import Any

import torch


def causal_lm(runner: Any) -> Any:
    """The `AutoModelForCausalLM` of a Hugging Face decoder runner (`attnviz.load_model("smollm2")`),
    built on the meta device and given the runner's base model and LM head; eval mode."""
    from transformers import AutoModelForCausalLM

    hf, head = getattr(runner, "hf_model", None), getattr(runner, "lm_head", None)
    if hf is None or head is None:
        raise ValueError(f"model '{runner.name}' is not a Hugging Face decoder with a language-model head")
    with torch.device("meta"):
        lm = AutoModelForCausalLM.from_config(hf.config, attn_implementation="eager")
    setattr(lm, lm.base_model_prefix, hf)
    lm.set_output_embeddings(head)
    left = [n for n, t in [*lm.named_parameters(), *lm.named_buffers()] if t.is_meta]
    if left:
        raise ValueError(f"model '{runner.name}' left {left[0]} unshared in its causal LM")
    return lm.eval()
