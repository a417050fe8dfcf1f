"""Where the parts of a pre-norm decoder layer live in Hugging Face's Llama-family models
(Llama, Mistral, Qwen2: `model.layers[i]` with input_layernorm, self_attn.{q,k,v,o}_proj,
post_attention_layernorm, mlp), as `prenorm.PreNormParts`. Beside huggingface.py, the one
other module that knows a Hugging Face module tree."""

from __future__ import annotations

from typing import Any

from .prenorm_parts import PreNormParts

# model types whose decoder layer is exactly x + attn(norm(x)), then + mlp(norm(.)); Gemma 2/3
# add norms after each block and are not listed
PRENORM_TYPES = {"llama", "mistral", "qwen2", "qwen3", "smollm3"}


def prenorm_parts(hf: Any, name: str) -> list[PreNormParts]:
    cfg: Any = getattr(hf, "config", None)
    kind = getattr(cfg, "model_type", type(hf).__name__)
    layers = getattr(getattr(hf, "base_model", hf), "layers", None)
    if kind not in PRENORM_TYPES or layers is None:
        raise ValueError(
            f"this needs a pre-norm decoder of the Llama family (Llama, Mistral, Qwen2, SmolLM2); "
            f"model '{name}' ({kind}) has another layout"
        )
    n_heads, n_kv = (
        int(cfg.num_attention_heads),
        int(getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads),
    )
    out = []
    for layer in layers[: int(cfg.num_hidden_layers)]:
        a = layer.self_attn
        head_dim = a.q_proj.weight.shape[0] // n_heads
        parts = (layer.input_layernorm, a.q_proj, a.k_proj, a.v_proj, a.o_proj, layer.post_attention_layernorm)
        out.append(PreNormParts(*parts, layer.mlp, n_heads, n_kv, head_dim))
    return out
