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
LayerNorm) with the layer's own parts: the same numbers as rerunning the whole layer with a
zero value at j (`Runner.layer_trace(..., value_scale=...)`; tests/test_contributions.py holds
the two together), without recomputing queries, keys and attention n times, and with the
feed-forward's first matrix applied to H x n vectors rather than n x n (see _RestOfLayer).

The cost is the rest of the feed-forward on n x n vectors per layer (n reruns of n positions):
the one method here that grows as n^3 d. Work goes in batches of positions j through the background lane
(`_model.in_batches`), with progress (and cancelling) between batches.

Against the authors' float32 code the maps agree to float rounding (2e-6 against their code run
in float64) except where the distances themselves are rounding: the [CLS] row. Zeroing any one
token barely moves [CLS]'s output, so that row's distances sum to about 1e-5, and the authors'
`sklearn.metrics.pairwise.cosine_distances` (1 - cos, hmohebbi/ValueZeroing demo.py) on float32
outputs loses most of those digits before the row is normalised; `cosine_distance` here takes
the distance from the difference of the unit vectors, so its [CLS] row is the one their code
gives in float64, and differs from their float32 row by their rounding.
"""

from __future__ import annotations

import torch

from ..models import Progress, Runner
from ._model import in_batches
from .decompose import LayerRecord, _centre, _gamma, _ln_scale

__all__ = ["cosine_distance", "value_zeroing_map"]


def cosine_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """1 - cos(a, b) over the last axis, as ||a/|a| - b/|b|||^2 / 2: the same number, but
    computed from the difference, so outputs that barely moved give a tiny distance and not
    float32 rounding noise (1 - cos of two nearly equal vectors cancels catastrophically)."""
    tiny = torch.finfo(a.dtype).tiny
    ua = a / a.norm(dim=-1, keepdim=True).clamp_min(tiny)
    ub = b / b.norm(dim=-1, keepdim=True).clamp_min(tiny)
    return 0.5 * (ua - ub).pow(2).sum(-1)


class _RestOfLayer:
    """The layer after its attention, LN2(mid + FF(mid)) with mid = LN1(pre1), for many pre1 =
    the recorded one minus what zeroing a token took.

    The feed-forward's first matrix is applied to LN1's output, which is linear in pre1 up to
    LN1's per-row scale s: W1 mid = W1 (gamma1 * centre(pre1)) / s + W1 beta1. With pre1 - lost,
    lost_ij = sum_h alpha[h,i,j] f_h(x_j), that is (A_i - B_ij) / s_ij + c, where A_i is computed
    once per position and B_ij = sum_h alpha[h,i,j] W1 (gamma1 * centre(f_h(x_j))) from H x n
    vectors made once: the n x n products with W1 (a third of the layer's cost) are never formed.
    The nonlinearity and the second matrix do run on all n x n vectors; nothing else is skipped."""

    def __init__(self, r: LayerRecord):
        p = self.parts = r.parts
        ln = p.ln_attention
        self.gamma = _gamma(ln, r.x)
        beta = getattr(ln, "bias", None)
        w1 = p.ff_in.weight.to(r.x)  # (4d, d)
        b1 = p.ff_in.bias
        self.a = (self.gamma * _centre(r.pre1)) @ w1.T  # (n, 4d)
        self.fw = ((self.gamma * _centre(r.f_by_key)) @ w1.T).contiguous()  # (n_j, H, 4d)
        zero = torch.zeros(w1.shape[0], dtype=r.x.dtype, device=r.x.device)
        self.c = (zero if beta is None else beta.to(r.x) @ w1.T) + (zero if b1 is None else b1.to(r.x))  # (4d,)

    def __call__(
        self, pre1: torch.Tensor, alpha: torch.Tensor | None = None, part: slice | None = None
    ) -> torch.Tensor:
        """pre1 (b_j, n, d); alpha (b_j, n, H) the weights of the zeroed tokens `part` (None:
        nothing lost). W1 mid + b1 = (A - alpha @ fw) / s + c is formed in two passes over the
        (b_j, n, 4d) tensor, the 1/s folded into the small alpha (one addcdiv, one baddbmm_):
        at 128 tokens that tensor is 100 MB a layer, and each elementwise pass over it costs
        about as much as a tenth of the matmul that follows."""
        p = self.parts
        s = _ln_scale(p.ln_attention, pre1)  # (b_j, n, 1): LN1's scale
        pre = torch.addcdiv(self.c, self.a, s)  # (b_j, n, 4d): c + A / s
        if alpha is not None:
            pre.baddbmm_(alpha / s, self.fw[part], alpha=-1)  # - sum_h alpha[h,i,j] / s_ij fw[j,h]
        hidden = p.activation(pre)
        return p.ln_ff(p.ln_attention(pre1) + p.ff_out(hidden))


@torch.inference_mode()
def value_zeroing_map(model: Runner, r: LayerRecord, progress: Progress | None = None) -> torch.Tensor:
    """Value Zeroing of one layer: (n, n), entry [i, j] = cosine distance between position i's
    output and its output with token j's value vectors zeroed in every head (not yet normalised).
    `model` gives the background lane and the batch size; the layer comes from `r`."""
    n = r.n
    out = torch.empty(n, n, dtype=r.x.dtype, device=r.x.device)
    rest = _RestOfLayer(r)
    base = rest(r.pre1[None])[0]  # (n, d): the same path as the reruns, so "nothing zeroed" gives 0
    for part in in_batches(model, n, n, progress=progress):
        a = r.alpha_by_key[part]  # (b_j, n_i, H), contiguous
        lost = a @ r.f_by_key[part]  # (b_j, n_i, d): what zeroing j takes from each position's attention output
        zeroed = rest(r.pre1[None] - lost, a, part)  # (b_j, n_i, d)
        out[:, part] = cosine_distance(zeroed, base[None]).T
    return out
