"""Value Zeroing (Mohebbi, Zuidema, Chrupala, Alishahi 2023, "Quantifying Context Mixing in
Transformers"): in one layer, zero token j's value vectors in every head, run the layer again,
and score j by how far each position's output moves (cosine distance); rows normalised.

Follows hmohebbi/ValueZeroing (scoring/value_zeroing.py) and its successor
hmohebbi/context_mixing_toolkit (src/modeling_bert.py, BertEncoder.forward: one rerun of the
layer per token t with `value_zeroing_index=t`, then `1 - cosine_similarity` of each output).

Zeroing j's values leaves the attention weights as they were (queries and keys do not use
values), so the attention output of position i loses exactly sum_h alpha[h,i,j] f_h(x_j) (the
value bias included, the output bias not). The rerun therefore starts from the recorded
x + attention output minus that vector and runs the rest of the layer (LayerNorm, feed-forward,
LayerNorm) with the layer's own modules: the same numbers as rerunning the whole layer with a
zero value at j (`Runner.layer_trace(..., value_scale=...)`; tests/test_contributions.py holds
the two together), without recomputing queries, keys and attention n times.

The cost is the feed-forward on n x n vectors per layer (n reruns of n positions): the one
method here that grows as n^3 d. Work goes in batches of positions j through the background lane
(`_model.in_batches`), with progress (and cancelling) between batches.
"""

from __future__ import annotations

import torch

from ..models import Progress, Runner
from ._model import in_batches
from .decompose import LayerRecord, feed_forward

__all__ = ["cosine_distance", "value_zeroing_map"]


def cosine_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """1 - cos(a, b) over the last axis, as ||a/|a| - b/|b|||^2 / 2: the same number, but
    computed from the difference, so outputs that barely moved give a tiny distance and not
    float32 rounding noise (1 - cos of two nearly equal vectors cancels catastrophically)."""
    tiny = torch.finfo(a.dtype).tiny
    ua = a / a.norm(dim=-1, keepdim=True).clamp_min(tiny)
    ub = b / b.norm(dim=-1, keepdim=True).clamp_min(tiny)
    return 0.5 * (ua - ub).pow(2).sum(-1)


def _rest_of_layer(r: LayerRecord, pre1: torch.Tensor) -> torch.Tensor:
    """LN2(mid + FF(mid)) with mid = LN1(pre1): the layer after its attention, (..., d)."""
    p = r.parts
    mid = p.ln_attention(pre1)
    return p.ln_ff(mid + feed_forward(p, mid))


@torch.inference_mode()
def value_zeroing_map(model: Runner, r: LayerRecord, progress: Progress | None = None) -> torch.Tensor:
    """Value Zeroing of one layer: (n, n), entry [i, j] = cosine distance between position i's
    output and its output with token j's value vectors zeroed in every head (not yet normalised).
    `model` gives the background lane and the batch size; the layer comes from `r`."""
    n = r.n
    out = torch.empty(n, n, dtype=r.x.dtype, device=r.x.device)
    base = _rest_of_layer(r, r.pre1)  # (n, d): the same path as the reruns, so "nothing zeroed" gives 0
    f_j = r.f.transpose(0, 1)  # (n_j, H, d)
    for part in in_batches(model, n, n, progress=progress):
        a = r.alpha[:, :, part].permute(2, 1, 0)  # (b_j, n_i, H)
        lost = a @ f_j[part]  # (b_j, n_i, d): what zeroing j takes from each position's attention output
        zeroed = _rest_of_layer(r, r.pre1[None] - lost)  # (b_j, n_i, d)
        out[:, part] = cosine_distance(zeroed, base[None]).T
    return out
