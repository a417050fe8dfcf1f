"""One pre-norm decoder layer taken apart (Llama family: RMSNorm before each block, grouped
heads, causal): what each earlier position j puts into position i's attention-block output,

    mid_i = x_i + sum_j sum_h alpha[h,i,j] f_h(x_j) + b_O,    f_h(x_j) = v_kv(h)(x_j) W_O^h

kv(h) the key/value head query head h reads, W_O^h its slice of o_proj. The feed-forward works
on each position alone, so the layer's token-to-token map is its attention block's. ALTI here is
Ferrando and Voita 2024 ("Information flow routes") as facebookresearch/llm-transparency-tool
implements it (`models/tlens_model.py` `decomposed_attn`, `routes/contributions.py`
`get_attention_contributions`): the proximity ||mid_i||_1 - ||mid_i - part||_1 of every (j, h)
vector and of the residual x_i, clipped at 0 (ALTI's max(0, .); the tool's 1e-5), so every map
is exactly 0 above the diagonal.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from ..models import Encoded, Progress, Runner
from ..models.prenorm_parts import PreNormParts
from ..scratch import LayerParts
from ._model import in_batches, this_thread
from .decompose import ByKey, transformed
from .value_zeroing import cosine_distance

PRENORM_METHODS = ("attention", "norm", "alti", "value_zeroing")
_PART_BUDGET = 2**22  # floats in one (rows, n_j, H, d) block of ALTI's parts: 16 MB


@dataclass(frozen=True, eq=False)
class PreNormRecord(ByKey):
    """One decoder layer of one recorded forward, batch of one: n tokens, d width, H query heads."""

    parts: PreNormParts
    x: torch.Tensor  # (n, d) the layer's input (the residual stream)
    alpha: torch.Tensor  # (H, n, n) attention weights, 0 above the diagonal
    f: torch.Tensor  # (H, n, d) f_h(x_j): the value vector head h reads, through its W_O slice
    mid: torch.Tensor  # (n, d) x + what o_proj returned: the attention block's output with its residual

    @cached_property
    def out(self) -> torch.Tensor:
        """(n, d) mid + mlp(norm_ff(mid)): on first use, as only Value Zeroing needs it."""
        with torch.inference_mode():
            return rest_of_layer(self.parts, self.mid)

    @property
    def bias(self) -> torch.Tensor:
        """(d,) o_proj's bias (zeros without one)."""
        b = self.parts.output.bias
        return torch.zeros_like(self.x[0]) if b is None else b.detach().to(self.x)


def attention_layers(model: Runner) -> tuple[str, list[PreNormParts] | list[LayerParts]]:
    """("prenorm", parts) for a pre-norm decoder (Llama family or the Training lab's), or
    ("postln", parts) for a post-LN encoder; ValueError for any other layout."""
    try:
        return "postln", model.layers()
    except ValueError as not_an_encoder:
        try:
            return "prenorm", model.prenorm_layers()
        except ValueError:
            raise ValueError(
                f"model '{model.name}' is neither a pre-norm decoder (Llama family, the Training lab's) nor a "
                "post-LayerNorm BERT-family encoder: its layers cannot be taken apart here"
            ) from not_an_encoder


def is_prenorm(model: Runner) -> bool:
    """True for a pre-norm decoder (Llama family), False for a post-LN encoder; ValueError for any other layout."""
    if getattr(model, "post_ln_encoder", False):  # known without loading transformers (models/minilm_quick.py)
        return False
    return attention_layers(model)[0] == "prenorm"


def rest_of_layer(p: PreNormParts, mid: torch.Tensor) -> torch.Tensor:
    """The feed-forward block with its residual on (..., n, d): mid + mlp(norm_ff(mid))."""
    return mid + p.mlp(p.norm_ff(mid))


def prenorm_trace(
    model: Runner, inputs: dict[str, torch.Tensor], parts: list[PreNormParts]
) -> tuple[np.ndarray, list[dict[str, torch.Tensor]]]:
    """`Runner.trace` for a decoder with these layers: the weights (L, H, n, n) and, per layer,
    "x" (the norm's input), "values" (v_proj's output, n x KV * hs) and "attn_out" (o_proj's output)."""
    records: list[dict[str, torch.Tensor]] = [{} for _ in parts]

    def keep(record: dict[str, torch.Tensor], name: str, from_input: bool) -> Callable[..., None]:
        def hook(_m: torch.nn.Module, args: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
            record[name] = (args[0] if from_input else out)[0]

        return this_thread(hook)

    with contextlib.ExitStack() as stack:
        for p, rec in zip(parts, records, strict=True):
            stack.callback(p.norm_attention.register_forward_hook(keep(rec, "x", True)).remove)
            stack.callback(p.value.register_forward_hook(keep(rec, "values", False)).remove)
            stack.callback(p.output.register_forward_hook(keep(rec, "attn_out", False)).remove)
        weights = model.attention_array(inputs)
    if weights.shape[0] != len(parts) or any(len(r) != 3 for r in records):
        raise ValueError(f"model '{model.name}' did not run each of its {len(parts)} layers once")
    return weights, records


def record_prenorm_layers(model: Runner, enc: Encoded) -> Iterator[PreNormRecord]:
    """One recorded forward of `enc` (background lane), then each layer's record in turn."""
    parts = model.prenorm_layers()
    with model.gate.background(), torch.inference_mode():
        alphas, traces = prenorm_trace(model, enc.inputs, parts)
    for p, alpha, rec in zip(parts, alphas, traces, strict=True):
        with torch.inference_mode():
            x = rec["x"].float()
            weights = torch.from_numpy(np.ascontiguousarray(alpha)).to(x.device).tril()  # exact zeros
            yield PreNormRecord(p, x, weights, transformed(p, rec["values"].float()), x + rec["attn_out"].float())


@torch.inference_mode()
def source_vectors(r: PreNormRecord) -> torch.Tensor:
    """(n_i, n_j, d): sum_h alpha[h,i,j] f_h(x_j), what position j puts into position i's
    attention-block output. Summed over j, plus x_i and o_proj's bias, it is mid_i."""
    return torch.einsum("hij,hjd->ijd", r.alpha, r.f)


@torch.inference_mode()
def alti_prenorm_map(r: PreNormRecord) -> torch.Tensor:
    """Ferrando and Voita 2024 (module docstring): the proximities summed over heads per token,
    the residual's on the diagonal. (n, n), not normalised, 0 above the diagonal."""
    n, (H, _, d) = r.n, r.f.shape
    y = r.mid
    y_l1 = y.abs().sum(-1)  # (n,)
    out = torch.zeros(n, n, dtype=y.dtype, device=y.device)
    block = max(1, _PART_BUDGET // max(1, n * H * d))
    f_j = r.f_by_key  # (n_j, H, d)
    for i0 in range(0, n, block):
        rows = slice(i0, min(n, i0 + block))
        a = r.alpha_by_key[: rows.stop, rows].transpose(0, 1)  # (b, j <= last row, H)
        parts = a[..., None] * f_j[None, : rows.stop]  # (b, n_j, H, d)
        dist = (y[rows, None, None, :] - parts).abs().sum(-1)  # (b, n_j, H)
        prox = (y_l1[rows, None, None] - dist).clamp_min(0).sum(-1)  # (b, n_j)
        out[rows, : rows.stop] = prox
    residual = (y_l1 - (y - r.x).abs().sum(-1)).clamp_min(0)  # (n,)
    idx = torch.arange(n, device=y.device)
    out[idx, idx] += residual
    return out.tril()


@torch.inference_mode()
def value_zeroing_prenorm_map(model: Runner, r: PreNormRecord, progress: Progress | None = None) -> torch.Tensor:
    """Value Zeroing of one decoder layer, (n, n) not normalised, lower triangular: [i, j] =
    cosine distance of position i's layer output with token j's values zeroed. The weights do
    not use values, so mid_i loses exactly sum_h alpha[h,i,j] f_h(x_j)."""
    n = r.n
    out = torch.zeros(n, n, dtype=r.x.dtype, device=r.x.device)
    base = r.out  # the same path as the reruns: "nothing zeroed" gives 0
    for part in in_batches(model, n, n, progress=progress):
        lo = part.start  # positions before the first zeroed token cannot see it: not rerun (half the work)
        lost = r.alpha_by_key[part, lo:] @ r.f_by_key[part]  # (b_j, n_i - lo, d)
        zeroed = rest_of_layer(r.parts, r.mid[None, lo:] - lost)
        out[lo:, part] = cosine_distance(zeroed, base[None, lo:]).T
    return out.tril()
