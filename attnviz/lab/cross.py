"""Cross-attention through an encoder's own layers: one sequence asks another.

Queries come from text X's hidden states, keys and values from text Y's, layer by layer, with
the layer's own projections and the project's one attention (`scratch.scaled_dot_product_attention`):

    A_l = softmax( (H_X^l W_Q) (H_Y^l W_K)^T / sqrt(d_k) )        (n_x, n_y) for each head

H_X^l and H_Y^l are each text's input to layer l run on its own; Y = X gives `model.attend(x)`.
"""

from __future__ import annotations

import numpy as np
import torch

from ..models import Runner, Steps
from ..result import Attention
from ..scratch import LayerParts, causal_mask, scaled_dot_product_attention


def cross_attention(model: Runner, x: str, y: str, max_tokens: int | None = None) -> Attention:
    """Every layer and head with queries from `x` and keys and values from `y`: an `Attention`
    of (layers, heads, n_x, n_y). A causal model's query i sees keys j <= i. ValueError for a
    model whose layers are not exposed (`Runner.layers()`)."""
    parts = model.layers()
    enc_x, enc_y = model.encode(x, max_tokens), model.encode(y, max_tokens)
    with model.gate.interactive(), torch.inference_mode():
        hx = model.hidden_states(enc_x.inputs)  # L + 1 x (1, n_x, d): the input of each layer
        hy = model.hidden_states(enc_y.inputs)
        maps = [_layer_map(p, hx[i][0], hy[i][0]) for i, p in enumerate(parts)]  # L x (H, n_x, n_y)
        weights = torch.stack(maps).float().cpu().numpy()
    return Attention(
        tokens=enc_x.tokens,
        weights=weights,
        model=model.name,
        device=str(model.device),
        truncated=enc_x.truncated or enc_y.truncated,
        special=enc_x.special,
        word_ids=enc_x.word_ids,
        text=enc_x.text,
        causal=False,
        n_input_tokens=enc_x.n_input_tokens,
        spans=enc_x.spans,
        key_tokens=tuple(enc_y.tokens),
    )


def _mask(p: LayerParts, n_q: int, n_k: int, like: torch.Tensor) -> torch.Tensor:
    """The additive mask (n_q, n_k): zeros, and for a causal layer key positions after the query's hidden."""
    if not p.causal:
        return torch.zeros(n_q, n_k, dtype=like.dtype, device=like.device)
    return causal_mask(max(n_q, n_k), like.dtype, like.device)[:n_q, :n_k]


def _layer_map(p: LayerParts, hx: torch.Tensor, hy: torch.Tensor) -> torch.Tensor:
    """One layer: hx (n_x, d) asks hy (n_y, d). Returns the weights (H, n_x, n_y)."""

    def heads(t: torch.Tensor) -> torch.Tensor:
        return t.view(t.shape[0], p.n_heads, p.head_dim).transpose(0, 1)  # (H, n, hs)

    q, k, v = heads(p.query(hx)), heads(p.key(hy)), heads(p.value(hy))
    _, weights = scaled_dot_product_attention(q, k, v, _mask(p, hx.shape[0], hy.shape[0], hx), p.scale)
    return weights


def cross_steps(model: Runner, x: str, y: str, layer: int = 0, head: int = 0, max_tokens: int | None = None) -> Steps:
    """The lab's step-by-step walk for one head, X asking Y (numpy): "x" (n_x, d) and "y" (n_y, d)
    the layer's inputs; q (n_x, hs) from X; k, v (n_y, hs) from Y; scores = q k^T (n_x, n_y);
    scaled; mask; masked; weights = softmax(masked); output = weights v (n_x, hs). With Y = X the
    same arrays as `model.steps(x, layer, head)`."""
    if not 0 <= layer < model.n_layers or not 0 <= head < model.n_heads:
        raise IndexError(f"layer/head out of range: {model.n_layers} layers x {model.n_heads} heads")
    p = model.layers()[layer]
    enc_x, enc_y = model.encode(x, max_tokens), model.encode(y, max_tokens)
    with model.gate.interactive(), torch.inference_mode():
        hx = model.hidden_states(enc_x.inputs)[layer][0]  # (n_x, d)
        hy = model.hidden_states(enc_y.inputs)[layer][0]  # (n_y, d)
        sl = slice(head * p.head_dim, (head + 1) * p.head_dim)
        q, k, v = p.query(hx)[:, sl], p.key(hy)[:, sl], p.value(hy)[:, sl]
        mask = _mask(p, hx.shape[0], hy.shape[0], hx)
        recorded: dict[str, torch.Tensor] = {}
        out, _ = scaled_dot_product_attention(q, k, v, mask, p.scale, steps=recorded)
    arrays = {"x": hx, "y": hy, "q": q, "k": k, "v": v, "mask": mask, "output": out, **recorded}
    return {name: np.asarray(t.float().cpu().numpy()) for name, t in arrays.items()}
