"""Self-attention from scratch, in plain torch ops (nanoGPT-style: one file, shape comments).

`scaled_dot_product_attention` returns the output and the weights (as transformers'
`eager_attention_forward` does) with the softmax written out: no fused kernel sits on the path
that produces a weight shown. `ScratchEncoder` is a BERT-architecture encoder (post-LayerNorm,
GELU) that can carry the embedded MiniLM's weights, so its attention equals the pretrained runner's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: bool | float = True,
    *,
    out: torch.Tensor | None = None,
    steps: dict[str, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q K^T / sqrt(d_k) + M) V  (Vaswani et al. 2017, eq. 1), the softmax written out.

    q, k, v: (..., n, d_k). mask: additive, broadcastable to (..., n, n), 0 where allowed and
    the dtype's most negative finite value where not (so fp16 does not overflow).
    scale: True divides by sqrt(d_k), False does not, a float multiplies by it.
    out: a (..., n, n) tensor to compute the weights in, in place (no autograd then).
    steps: receives copies of "scores", "scaled", "masked" and "weights" (the lab shows them).
    Returns (output (..., n, d_v), weights (..., n, n)).
    """
    scaling = float(scale) if not isinstance(scale, bool) else (q.size(-1) ** -0.5 if scale else 1.0)
    in_place = out is not None or not torch.is_grad_enabled()
    w = torch.matmul(q, k.transpose(-2, -1), out=out)  # (..., n, n)
    _keep(steps, "scores", w)
    w = w.mul_(scaling) if in_place else w * scaling
    _keep(steps, "scaled", w)
    if mask is not None:
        w = w.add_(mask) if in_place else w + mask
    _keep(steps, "masked", w)
    if in_place:  # softmax in place: no (..., n, n) temporaries at 512 tokens. torch's own kernel
        # (one pass a row, written over its input) is bit for bit transformers' eager softmax, and
        # twice as fast as max, subtract, exp, sum and divide as five in-place passes
        w = torch.softmax(w, dim=-1, out=w)
    else:
        e = (w - w.amax(dim=-1, keepdim=True)).exp()
        w = e / e.sum(dim=-1, keepdim=True)  # rows sum to 1
    _keep(steps, "weights", w)
    return torch.matmul(w, v), w


def _keep(steps: dict[str, torch.Tensor] | None, name: str, value: torch.Tensor) -> None:
    if steps is not None:
        steps[name] = value.detach().clone()


def _additive(blocked: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The additive mask of a bool tensor: the dtype's most negative finite value where True, else 0."""
    return torch.zeros(blocked.shape, dtype=dtype, device=blocked.device).masked_fill(blocked, torch.finfo(dtype).min)


def causal_mask(n: int, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> torch.Tensor:
    """(n, n) additive mask: token i may look at j <= i only."""
    return _additive(torch.ones(n, n, dtype=torch.bool, device=device).triu(1), dtype)


def padding_mask(attention_mask: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(B, n) with 1 = real token, 0 = padding  ->  (B, 1, 1, n) additive mask over keys."""
    return _additive(~attention_mask.to(torch.bool)[:, None, None, :], dtype)


def sinusoidal_positions(n: int, d_model: int) -> torch.Tensor:
    """(n, d_model) fixed encoding: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...)."""
    position = torch.arange(n, dtype=torch.float32)[:, None]  # (n, 1)
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(n, d_model)
    pe[:, 0::2] = torch.sin(position * freq)
    pe[:, 1::2] = torch.cos(position * freq[: d_model // 2])
    return pe


def combined_mask(
    attention_mask: torch.Tensor | None,
    n: int,
    causal: bool,
    dtype: torch.dtype,
    device: torch.device,
    allowed: torch.Tensor | None = None,
) -> torch.Tensor | None:
    """The additive mask of a batch: padding columns (from a (B, n) 1/0 mask) and, when
    `causal`, the upper triangle; `allowed` (n, n) bool (a sparse pattern, lab/sparse.py)
    masks where it is False; None when nothing is masked."""
    mask = None if attention_mask is None else padding_mask(attention_mask, dtype)  # (B, 1, 1, n)
    parts = [causal_mask(n, dtype, device)] if causal else []  # (n, n)
    if allowed is not None:
        parts.append(_additive(~allowed[:n, :n].to(device), dtype))
    for c in parts:
        mask = c if mask is None else (mask + c).clamp(min=torch.finfo(dtype).min)
    return mask


def multi_head_attention(
    x: torch.Tensor,
    query: nn.Module,
    key: nn.Module,
    value: nn.Module,
    output: nn.Module,
    n_heads: int,
    head_dim: int,
    mask: torch.Tensor | None = None,
    scale: bool = True,
    *,
    value_scale: torch.Tensor | None = None,
    trace: dict[str, torch.Tensor] | None = None,
    memory: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Project, split into heads, attend, merge, project back. x: (B, T, d).

    memory (B, S, d): the stream keys and values come from (cross-attention; x itself by default).
    value_scale (B, S) multiplies each token's value vector in every head (0 removes a token's
    value, as Value Zeroing does); trace receives "values" x W_V + b_V (B, S, nh*hs), "context"
    (the heads side by side before the output projection) and "attn_out" (after it).
    Returns (output (B, T, d), weights (B, nh, T, S))."""
    B, T, _ = x.shape
    source = x if memory is None else memory  # (B, S, d)

    def split(t: torch.Tensor) -> torch.Tensor:
        return t.view(B, t.shape[1], n_heads, head_dim).transpose(1, 2)  # (B, nh, T or S, hs)

    values = value(source)  # (B, S, nh*hs)
    if value_scale is not None:
        values = values * value_scale[..., None].to(values.dtype)
    y, weights = scaled_dot_product_attention(split(query(x)), split(key(source)), split(values), mask, scale)
    context = y.transpose(1, 2).reshape(B, T, n_heads * head_dim)  # (B, T, nh*hs)
    out = output(context)  # (B, T, d)
    if trace is not None:
        trace.update(values=values, context=context, attn_out=out)
    return out, weights


class MultiHeadSelfAttention(nn.Module):
    """Q, K, V projections, split into heads, scaled dot product, merge, output projection.

    With n_heads=1, d_model=16 this is the single-head module of the textbook; with
    d_model=512, n_heads=8 it is the d_k=64 module; with d_model=64, n_heads=2, head_dim=32
    the head width need not be d_model / n_heads. Given a `memory`, the same projections attend
    from x to another stream (an encoder-decoder's cross-attention).
    """

    def __init__(self, d_model: int, n_heads: int, head_dim: int | None = None):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = head_dim if head_dim is not None else d_model // n_heads
        inner = self.n_heads * self.head_dim
        self.query = nn.Linear(d_model, inner)
        self.key = nn.Linear(d_model, inner)
        self.value = nn.Linear(d_model, inner)
        self.output = nn.Linear(inner, d_model)

    def forward(
        self,
        x: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        causal: bool = False,
        allowed: torch.Tensor | None = None,
        memory: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x: (B, T, d_model); attention_mask: (B, T) with 1 = token, 0 = padding; allowed:
        (>= T, >= T) bool, a sparse pattern (False: masked); memory: (B, S, d_model), the keys'
        and values' stream, unmasked. Returns (output (B, T, d_model), weights (B, nh, T, T or S))."""
        mask = combined_mask(attention_mask, x.shape[1], causal, x.dtype, x.device, allowed)
        return multi_head_attention(
            x, self.query, self.key, self.value, self.output, self.n_heads, self.head_dim, mask, memory=memory
        )


@dataclass(frozen=True, eq=False)
class LayerParts:
    """The parts of one post-LayerNorm encoder layer (BERT: x = LN(x + Attn(x)); x = LN(x + FF(x))).

    The scratch encoder's layers and Hugging Face BERT-family layers both hand these out
    (`Runner.layers()`), so explanation methods and head switches never reach into a model's
    own module tree, and `post_ln_layer` recomputes any layer with the project's one attention."""

    query: nn.Linear  # d -> nh*hs
    key: nn.Linear
    value: nn.Linear
    output: nn.Linear  # nh*hs -> d: its input holds the heads side by side
    ln_attention: nn.LayerNorm
    ff_in: nn.Linear
    ff_out: nn.Linear
    ln_ff: nn.LayerNorm
    n_heads: int
    head_dim: int
    activation: Callable[[torch.Tensor], torch.Tensor] = F.gelu
    scale: bool = True
    causal: bool = False
    allowed: torch.Tensor | None = None  # (n, n) bool sparse pattern (attnviz/sparse.py); None: every key


# Where each part of LayerParts lives in a Hugging Face BertLayer (BERT, RoBERTa, ELECTRA, MiniLM):
# field -> attribute path; the same names, with ".weight" and ".bias", are its checkpoint's keys.
BERT_LAYER_PATHS = {
    "query": "attention.self.query",
    "key": "attention.self.key",
    "value": "attention.self.value",
    "output": "attention.output.dense",
    "ln_attention": "attention.output.LayerNorm",
    "ff_in": "intermediate.dense",
    "ff_out": "output.dense",
    "ln_ff": "output.LayerNorm",
    "activation": "intermediate.intermediate_act_fn",
}


def post_ln_layer(
    p: LayerParts,
    x: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    *,
    value_scale: torch.Tensor | None = None,
    trace: dict[str, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One encoder layer on x (B, T, d): returns (output (B, T, d), weights (B, nh, T, T)).

    trace receives, besides what `multi_head_attention` records, "mid" (after the first
    LayerNorm), "ff" (the feed-forward output) and "out"."""
    mask = combined_mask(attention_mask, x.shape[1], p.causal, x.dtype, x.device, p.allowed)
    a, weights = multi_head_attention(
        x, p.query, p.key, p.value, p.output, p.n_heads, p.head_dim, mask, p.scale, value_scale=value_scale, trace=trace
    )
    mid = p.ln_attention(x + a)  # (B, T, d)
    ff = p.ff_out(p.activation(p.ff_in(mid)))  # (B, T, d)
    out = p.ln_ff(mid + ff)  # (B, T, d)
    if trace is not None:
        trace.update(mid=mid, ff=ff, out=out)
    return out, weights


@dataclass
class EncoderConfig:
    vocab_size: int = 30522  # the uncased BERT WordPiece vocabulary MiniLM shares
    max_positions: int = 512  # learned position embeddings, BERT's limit
    type_vocab_size: int = 2  # segment A / B
    d_model: int = 384  # MiniLM-L6-H384
    n_heads: int = 12  # head size 32
    d_ff: int = 1536  # 4 x d_model
    n_layers: int = 6
    layer_norm_eps: float = 1e-12  # BERT's value; matters for exact agreement
    scale: bool = True  # divide scores by sqrt(d_k)
    positions: bool = True  # add position embeddings
    causal: bool = False  # mask the upper triangle (GPT-style)
    sinusoidal: bool = False  # fixed sin/cos positions instead of learned ones (untrained model)


class EncoderLayer(nn.Module):
    """BERT layer: x = LN(x + Attn(x)); x = LN(x + FF(x)) (post-LN, exact GELU)."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.cfg = cfg
        self.attention = MultiHeadSelfAttention(cfg.d_model, cfg.n_heads)
        self.ln_attention = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.ff_in = nn.Linear(cfg.d_model, cfg.d_ff)
        self.ff_out = nn.Linear(cfg.d_ff, cfg.d_model)
        self.ln_ff = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)

    def parts(self) -> LayerParts:
        a = self.attention
        return LayerParts(
            a.query, a.key, a.value, a.output, self.ln_attention, self.ff_in, self.ff_out, self.ln_ff,
            a.n_heads, a.head_dim, F.gelu, self.cfg.scale, self.cfg.causal,
        )  # fmt: skip

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        return post_ln_layer(self.parts(), x, attention_mask)


class ScratchEncoder(nn.Module):
    """Embeddings (word + position + segment, LayerNorm) and a stack of `EncoderLayer`s."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.cfg = cfg
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.position_embeddings = nn.Embedding(cfg.max_positions, cfg.d_model)
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, cfg.d_model)
        self.ln_embeddings = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_layers))
        if cfg.sinusoidal:
            self.position_embeddings.weight.data.copy_(sinusoidal_positions(cfg.max_positions, cfg.d_model))

    def embed(
        self,
        input_ids: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if inputs_embeds is None:
            if input_ids is None:
                raise ValueError("give input_ids or inputs_embeds")
            inputs_embeds = self.word_embeddings(input_ids)  # (B, T, d)
        B, T, _ = inputs_embeds.shape
        x = inputs_embeds
        if self.cfg.positions:
            x = x + self.position_embeddings(torch.arange(T, device=x.device))[None]
        if token_type_ids is None:
            token_type_ids = torch.zeros(B, T, dtype=torch.long, device=x.device)
        x = x + self.token_type_embeddings(token_type_ids)
        return self.ln_embeddings(x)  # (B, T, d)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Returns (last hidden state (B, T, d), one (B, nh, T, T) weight tensor per layer).

        `inputs_embeds` (B, T, d) replaces the word embeddings (as in transformers), so
        gradients with respect to the input vectors can be taken."""
        x = self.embed(input_ids, token_type_ids, inputs_embeds)
        attentions = []
        for layer in self.layers:
            x, weights = layer(x, attention_mask)
            attentions.append(weights)
        return x, attentions

    @classmethod
    def from_bert_state_dict(cls, state: dict[str, torch.Tensor], cfg: EncoderConfig) -> ScratchEncoder:
        """Build an encoder carrying a Hugging Face `BertModel`'s weights (names without or
        with the "bert." prefix)."""
        state = {k.removeprefix("bert."): v for k, v in state.items()}
        model = cls(cfg)
        mapping = {
            "word_embeddings.weight": "embeddings.word_embeddings.weight",
            "position_embeddings.weight": "embeddings.position_embeddings.weight",
            "token_type_embeddings.weight": "embeddings.token_type_embeddings.weight",
            "ln_embeddings.weight": "embeddings.LayerNorm.weight",
            "ln_embeddings.bias": "embeddings.LayerNorm.bias",
        }
        for i in range(cfg.n_layers):
            for part, theirs in BERT_LAYER_PATHS.items():
                ours = f"attention.{part}" if part in ("query", "key", "value", "output") else part
                if part != "activation":  # a function, no weights
                    for p in ("weight", "bias"):
                        mapping[f"layers.{i}.{ours}.{p}"] = f"encoder.layer.{i}.{theirs}.{p}"
        missing = [theirs for theirs in mapping.values() if theirs not in state]
        if missing:
            raise ValueError(f"not a BERT checkpoint: missing {missing[:3]}")
        # assign=True keeps the given tensors instead of copying them: encoders built from one
        # cached state dict (the lab's switch variants) share one copy of the weights.
        model.load_state_dict({ours: state[theirs] for ours, theirs in mapping.items()}, assign=True)
        return model
