"""An independent recomputation of a Llama-family decoder's attention, for the decoder tests:
each layer's input captured from the real forward, then RMSNorm, q/k projections, rotary
positions, grouped keys (query head h reads key/value head h // (H / KV)), causal softmax,
written here from the formulas in float64."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


def layer_inputs(runner: Any, text: str) -> list[torch.Tensor]:
    """The hidden state entering each decoder layer, (n, d), from one real forward."""
    enc = runner.encode(text)
    seen: list[torch.Tensor] = []

    def keep(_m: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        seen.append((args[0] if args else kwargs["hidden_states"])[0].detach())

    hooks = [layer.register_forward_pre_hook(keep, with_kwargs=True) for layer in runner.hf_model.layers]
    try:
        with torch.inference_mode():
            runner.hf_model(**enc.inputs)
    finally:
        for h in hooks:
            h.remove()
    return seen


def _rope(x: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotary positions (Su et al. 2021) in the rotate-half layout: x (heads, n, d)."""
    d = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = torch.arange(x.shape[1], dtype=torch.float64)[:, None] * inv[None, :]  # (n, d/2)
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
    rotated = torch.cat([-x[..., d // 2 :], x[..., : d // 2]], dim=-1)
    return x * cos + rotated * sin


def reference_attention(runner: Any, text: str) -> np.ndarray:
    """(layers, heads, n, n) float64 weights, computed without transformers' attention code."""
    cfg = runner.hf_model.config
    n_heads, n_kv = cfg.num_attention_heads, cfg.num_key_value_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // n_heads
    rope = getattr(cfg, "rope_parameters", None) or {}
    theta = float(rope.get("rope_theta", getattr(cfg, "rope_theta", 10000.0)))
    out = []
    with torch.no_grad():
        for layer, h in zip(runner.hf_model.layers, layer_inputs(runner, text), strict=True):
            out.append(_layer_weights(layer, h, n_heads, n_kv, head_dim, theta))
    return np.stack(out)


def _layer_weights(layer: Any, h: torch.Tensor, n_heads: int, n_kv: int, head_dim: int, theta: float) -> np.ndarray:
    h = h.double()
    norm = layer.input_layernorm
    x = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon) * norm.weight.double()
    att = layer.self_attn
    n = x.shape[0]
    q = (x @ att.q_proj.weight.double().T).view(n, n_heads, head_dim).transpose(0, 1)
    k = (x @ att.k_proj.weight.double().T).view(n, n_kv, head_dim).transpose(0, 1)
    q, k = _rope(q, theta), _rope(k, theta)
    k = k[[hd // (n_heads // n_kv) for hd in range(n_heads)]]  # the key head each query head reads
    scores = q @ k.transpose(-1, -2) / head_dim**0.5
    scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return scores.softmax(-1).numpy()
