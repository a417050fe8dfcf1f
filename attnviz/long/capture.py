"""The long forward: every layer through torch SDPA (which never returns the n x n weights),
keeping each layer's queries and keys after rotary positions so any map can be recomputed exactly.

A Hugging Face model runs as a twin: a module tree on the meta device sharing the same tensors
(no copy), so the shared model keeps eager attention for visitors' passes. A batch of one without
padding needs no mask beyond `is_causal`, so no (n, n) mask is built.
"""

from __future__ import annotations

import copy
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.nn import functional as F

from ..scratch import LayerParts

_NAME = "attnviz_long_sdpa"
_RECORD = threading.local()
_TWINS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()  # shared model -> its SDPA twin
_TWINS_LOCK = threading.Lock()

Check = Callable[[int], None]  # called with the layer about to run; raises Cancelled to stop


@dataclass
class Kept:
    """What the forward keeps: per layer queries (H, n, d) and keys (KV, n, d), float32 on the CPU,
    and the scale the scores are multiplied by; `check` runs before each layer is kept."""

    check: Check
    queries: list[torch.Tensor] = field(default_factory=list)
    keys: list[torch.Tensor] = field(default_factory=list)
    scaling: list[float] = field(default_factory=list)

    def add(self, q: torch.Tensor, k: torch.Tensor, scaling: float) -> None:
        self.check(len(self.queries))
        self.queries.append(q[0].detach().float().cpu().contiguous())
        self.keys.append(k[0].detach().float().cpu().contiguous())
        self.scaling.append(float(scaling))


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scaling: float) -> torch.Tensor:
    """SDPA over (B, H, n, d) queries and (B, KV, n, d) keys/values: grouped heads expanded here."""
    groups = q.shape[1] // k.shape[1]
    if groups > 1:
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal and q.shape[2] > 1, scale=scaling)


def _long_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """The twin's attention: record q and k, then SDPA (the mask is not used: module docstring)."""
    scale = float(scaling) if scaling is not None else query.shape[-1] ** -0.5
    causal = bool(kwargs.get("is_causal", getattr(module, "is_causal", False)))
    kept: Kept | None = getattr(_RECORD, "kept", None)
    if kept is not None:
        kept.add(query, key, scale)
    return _sdpa(query, key, value, causal, scale).transpose(1, 2).contiguous(), None  # (B, n, H, d)


def twin(hf_model: Any) -> Any:
    """The SDPA twin of a shared Hugging Face model: same tensors, its own config and modules."""
    with _TWINS_LOCK:
        found = _TWINS.get(hf_model)
        if found is not None:
            return found
        from transformers import AttentionInterface, AttentionMaskInterface
        from transformers.masking_utils import sdpa_mask

        AttentionInterface.register(_NAME, _long_attention)
        AttentionMaskInterface.register(_NAME, sdpa_mask)  # None for a batch of one without padding
        cfg = copy.deepcopy(hf_model.config)
        cfg._attn_implementation = _NAME
        with torch.device("meta"):
            made = type(hf_model)._from_config(cfg, attn_implementation=_NAME)
        shared = [*hf_model.named_parameters(remove_duplicate=False), *hf_model.named_buffers(remove_duplicate=False)]
        for name, tensor in shared:
            owner, _, leaf = name.rpartition(".")
            module = made.get_submodule(owner)  # owner "" is the model itself
            slots = module._parameters if leaf in module._parameters else module._buffers
            slots[leaf] = tensor
        leftover = [n for n, t in [*made.named_parameters(), *made.named_buffers()] if t.is_meta]
        if leftover:
            raise ValueError(f"this model's long mode could not share its tensors ({leftover[0]})")
        made.eval()
        _TWINS[hf_model] = made  # goes with the shared model
        return made


def run_hf(hf_model: Any, inputs: dict[str, torch.Tensor], check: Check) -> Kept:
    """One long forward of a Hugging Face model (batch of one)."""
    model = twin(hf_model)
    kept = Kept(check=check)
    extra: dict[str, Any] = {"use_cache": False} if "use_cache" in model.config.to_dict() else {}
    _RECORD.kept = kept
    try:
        with torch.inference_mode():
            model(**inputs, return_dict=True, **extra)
    finally:
        _RECORD.kept = None
    return kept


def run_scratch(encoder: Any, layers: list[LayerParts], inputs: dict[str, torch.Tensor], check: Check) -> Kept:
    """One long forward of the scratch encoder: its post-LN layers with SDPA in place of the
    written-out softmax (same maths; no weights)."""
    kept = Kept(check=check)
    with torch.inference_mode():
        x = encoder.embed(inputs["input_ids"], inputs.get("token_type_ids"))  # (1, T, d)
        B, T, _ = x.shape
        for p in layers:
            q, k, v = (t.view(B, T, p.n_heads, p.head_dim).transpose(1, 2) for t in (p.query(x), p.key(x), p.value(x)))
            scaling = p.head_dim**-0.5 if p.scale else 1.0
            kept.add(q, k, scaling)
            y = _sdpa(q, k, v, p.causal, scaling)
            a = p.output(y.transpose(1, 2).reshape(B, T, p.n_heads * p.head_dim))
            mid = p.ln_attention(x + a)
            x = p.ln_ff(mid + p.ff_out(p.activation(p.ff_in(mid))))
    return kept
