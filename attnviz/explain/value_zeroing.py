"""Value Zeroing (Mohebbi, Zuidema, Chrupala, Alishahi 2023, "Quantifying Context Mixing in
Transformers"): in one layer, zero token j's value vectors in every head, run the layer again,
and score j by how far each position's output moves (cosine distance); rows normalised.
Follows hmohebbi/ValueZeroing (scoring/value_zeroing.py) and hmohebbi/context_mixing_toolkit
(src/modeling_bert.py, BertEncoder.forward, `value_zeroing_index`).

Zeroing j's values leaves the weights as they were, so position i's attention output loses
exactly sum_h alpha[h,i,j] f_h(x_j): the rerun starts from the recorded x + attention output less
that vector, without recomputing attention n times (still n^3 d: the feed-forward on n x n
vectors per layer). The maps match the authors' code run in float64; `cosine_distance` keeps the
digits their float32 1 - cos loses.
"""

from __future__ import annotations

import torch

from ..models import Progress, Runner
from ._model import in_batches
from .decompose import LayerRecord, _centre, _gamma, _ln_scale


def cosine_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """1 - cos(a, b) over the last axis, as ||a/|a| - b/|b|||^2 / 2: from the difference, so
    nearly equal vectors give a tiny distance, not float32 cancellation noise."""
    tiny = torch.finfo(a.dtype).tiny
    ua = a / a.norm(dim=-1, keepdim=True).clamp_min(tiny)
    ub = b / b.norm(dim=-1, keepdim=True).clamp_min(tiny)
    return 0.5 * (ua - ub).pow(2).sum(-1)


@torch.inference_mode()
def value_zeroing_map(model: Runner, r: LayerRecord, progress: Progress | None = None) -> torch.Tensor:
    """Value Zeroing of one layer, (n, n) not normalised: [i, j] = cosine distance of position
    i's output with token j's values zeroed in every head.

    The rest of the layer, LN2(mid + FF(mid)) with mid = LN1(pre1), runs on each pre1 = the
    recorded one minus what zeroing a token took. LN1 is linear up to its row scale s, so
    W1 mid = (A_i - B_ij) / s_ij + c with A_i per position and B_ij = sum_h alpha[h,i,j]
    W1 (gamma1 * centre(f_h(x_j))) from H x n vectors: no n x n product with W1 is formed."""
    p, n = r.parts, r.n
    gamma, beta, b1 = _gamma(p.ln_attention, r.x), getattr(p.ln_attention, "bias", None), p.ff_in.bias
    w1 = p.ff_in.weight.to(r.x)  # (4d, d)
    a = (gamma * _centre(r.pre1)) @ w1.T  # (n, 4d)
    fw = ((gamma * _centre(r.f_by_key)) @ w1.T).contiguous()  # (n_j, H, 4d)
    zero = torch.zeros(w1.shape[0], dtype=r.x.dtype, device=r.x.device)
    c = (zero if beta is None else beta.to(r.x) @ w1.T) + (zero if b1 is None else b1.to(r.x))  # (4d,)

    def rest(pre1: torch.Tensor, alpha: torch.Tensor | None = None, part: slice | None = None) -> torch.Tensor:
        """pre1 (b_j, n, d); alpha (b_j, n, H) the weights of the zeroed tokens `part` (None:
        nothing lost). Two passes over the large (b_j, n, 4d) tensor, 1/s folded into alpha."""
        s = _ln_scale(p.ln_attention, pre1)  # (b_j, n, 1): LN1's scale
        pre = torch.addcdiv(c, a, s)  # (b_j, n, 4d): c + A / s
        if alpha is not None:
            pre.baddbmm_(alpha / s, fw[part], alpha=-1)  # - sum_h alpha[h,i,j] / s_ij fw[j,h]
        return p.ln_ff(p.ln_attention(pre1) + p.ff_out(p.activation(pre)))

    out = torch.empty(n, n, dtype=r.x.dtype, device=r.x.device)
    base = rest(r.pre1[None])[0]  # (n, d): the same path as the reruns, so "nothing zeroed" gives 0
    for part in in_batches(model, n, n, progress=progress):
        alpha = r.alpha_by_key[part]  # (b_j, n_i, H), contiguous
        lost = alpha @ r.f_by_key[part]  # (b_j, n_i, d): what zeroing j takes from each position's attention output
        out[:, part] = cosine_distance(rest(r.pre1[None] - lost, alpha, part), base[None]).T
    return out
