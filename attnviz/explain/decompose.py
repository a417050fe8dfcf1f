"""One post-LN encoder layer taken apart (BERT: mid = LN1(x + Attn(x)); out = LN2(mid + FF(mid))),
from one recorded forward (`Runner.trace`) and the layer's own modules; torch in and out (float32).
Linear in its value vectors up to LN1's scale, position i's attention output splits into one
vector per input position j (Kobayashi et al. 2020), the second term the residual:

    v_ij = sum_h alpha[h,i,j] f_h(x_j)  +  [i == j] x_i,     f_h(x_j) = (x_j W_V + b_V)_h W_O^h

    norm_map     ||sum_h alpha f||                            Kobayashi et al. 2020 (no residual)
    globenc_map  ||LN2'(LN1'(v_ij))||, LN' = LN without bias  Modarressi et al. 2022, GlobEnc
    alti_map     max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1)     Ferrando et al. 2022, ALTI
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from ..models import Encoded, Runner
from ..models.prenorm_parts import PreNormParts
from ..scratch import LayerParts, post_ln_layer

ROW_BLOCK = 32  # query rows per block where an (rows, n, d) tensor is formed (ALTI): ~25 MB at n=512


class ByKey:
    """A layer record's weights alpha (H, n, n) and vectors f (H, n, d) laid out by key j,
    contiguous: CPU bmm on a permuted view is far slower."""

    x: torch.Tensor
    alpha: torch.Tensor
    f: torch.Tensor

    @property
    def n(self) -> int:
        return int(self.x.shape[0])

    @cached_property
    def alpha_by_key(self) -> torch.Tensor:
        """(n_j, n_i, H): alpha[h, i, j] at [j, i, h]."""
        return self.alpha.permute(2, 1, 0).contiguous()

    @cached_property
    def f_by_key(self) -> torch.Tensor:
        """(n_j, H, d): f_h(x_j) at [j, h]."""
        return self.f.transpose(0, 1).contiguous()


@dataclass(frozen=True, eq=False)
class LayerRecord(ByKey):
    """One layer of one recorded forward, batch of one. Shapes: n tokens, d model width, H heads."""

    parts: LayerParts
    x: torch.Tensor  # (n, d) the layer's input
    alpha: torch.Tensor  # (H, n, n) attention weights
    f: torch.Tensor  # (H, n, d) f_h(x_j): each head's value vector through its slice of W_O (b_V in, b_O out)
    pre1: torch.Tensor  # (n, d) x + attention output: what the first LayerNorm normalises
    mid: torch.Tensor  # (n, d) LN1(pre1)
    pre2: torch.Tensor  # (n, d) mid + FF(mid): what the second LayerNorm normalises
    out: torch.Tensor  # (n, d) LN2(pre2): the layer's output


def kv_heads(p: LayerParts | PreNormParts) -> list[int]:
    """The key/value head each query head reads (an encoder's heads read their own)."""
    return p.kv_heads if isinstance(p, PreNormParts) else list(range(p.n_heads))


def transformed(p: LayerParts | PreNormParts, values: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """f_h(x_j) = (x_j W_V + b_V)_kv(h) W_O^h from values = x W_V + b_V (n, KV * hs): (H, n, d),
    b_O out, each query head reading its key/value head (repeat_kv's layout). `out` may be
    reused across layers: fresh pages of a large tensor cost time."""
    v = values.view(values.shape[0], -1, p.head_dim)
    if isinstance(p, PreNormParts):
        v = v[:, p.kv_heads]
    v = v.transpose(0, 1).contiguous()  # (H, n, hs)
    w_o = p.output.weight.view(-1, p.n_heads, p.head_dim).permute(1, 2, 0).to(v.dtype).contiguous()  # (H, hs, d)
    return torch.matmul(v, w_o, out=out)  # (H, n, d); contiguous operands: see ByKey


def _record(
    p: LayerParts, x: torch.Tensor, alpha: torch.Tensor, values: torch.Tensor, attn_out: torch.Tensor
) -> LayerRecord:
    """The record of one layer from what its attention produced; the rest is recomputed."""
    pre1 = x + attn_out
    mid = p.ln_attention(pre1)
    pre2 = mid + p.ff_out(p.activation(p.ff_in(mid)))
    return LayerRecord(p, x, alpha, transformed(p, values), pre1, mid, pre2, p.ln_ff(pre2))


def record_layers(model: Runner, enc: Encoded) -> Iterator[LayerRecord]:
    """One recorded forward of `enc`, then each layer's record in turn (the feed-forward rerun
    on n vectors, so nothing beyond the trace is kept for all layers at once)."""
    parts = model.layers()
    with model.gate.background(), torch.inference_mode():
        alphas, traces = model.trace(enc.inputs)
    for p, alpha, rec in zip(parts, alphas, traces, strict=True):
        with torch.inference_mode():
            x = rec["x"].float()
            weights = torch.from_numpy(np.ascontiguousarray(alpha)).to(x.device)
            yield _record(p, x, weights, rec["values"].float(), rec["attn_out"].float())


def layer_record(p: LayerParts, x: torch.Tensor) -> LayerRecord:
    """The record of layer `p` run on x (n, d) with the project's attention (`post_ln_layer`)."""
    trace: dict[str, torch.Tensor] = {}
    with torch.inference_mode():
        _, weights = post_ln_layer(p, x[None], trace=trace)
        return _record(p, x, weights[0], trace["values"][0], trace["attn_out"][0])


def _centre(t: torch.Tensor) -> torch.Tensor:
    return t - t.mean(-1, keepdim=True)


def _ln_scale(ln: torch.nn.Module, pre: torch.Tensor) -> torch.Tensor:
    """(..., 1): LayerNorm's row divisor sqrt(biased variance + eps), the variance as the centred
    row's squared norm over d (var(unbiased=False) to rounding, faster on CPU)."""
    eps = float(getattr(ln, "eps", 1e-12))
    var = torch.linalg.vector_norm(_centre(pre), dim=-1, keepdim=True).square_().div_(pre.shape[-1])
    return var.add_(eps).sqrt_()


def _gamma(ln: torch.nn.Module, like: torch.Tensor) -> torch.Tensor:
    weight = getattr(ln, "weight", None)
    return torch.ones(like.shape[-1], dtype=like.dtype, device=like.device) if weight is None else weight.to(like)


@torch.inference_mode()
def quadratic_norms(alpha: torch.Tensor, gram: torch.Tensor) -> torch.Tensor:
    """sqrt(alpha_ij^T C_j alpha_ij) for every (i, j): (n, n). alpha (H, n, n), C = gram (n_j, H, H)."""
    n = alpha.shape[-1]
    out = torch.empty(n, n, dtype=gram.dtype, device=gram.device)
    for i0 in range(0, n, 4 * ROW_BLOCK):
        a = alpha[:, i0 : i0 + 4 * ROW_BLOCK].permute(2, 1, 0).contiguous()  # (n_j, b_i, H): see ByKey
        out[i0 : i0 + 4 * ROW_BLOCK] = ((a @ gram) * a).sum(-1).clamp_min_(0).sqrt_().T
    return out


@torch.inference_mode()
def head_sum_norms(alpha: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """||sum_h alpha[h,i,j] g_h(x_j)|| for every (i, j): (n, n). alpha (H, n, n), g (H, n, d):
    the square is alpha_ij^T C_j alpha_ij with C_j the heads' (H, H) Gram matrix at j."""
    gj = g.transpose(0, 1).contiguous()  # (n_j, H, d)
    return quadratic_norms(alpha, gj @ gj.transpose(1, 2))


@torch.inference_mode()
def norm_map(r: ByKey) -> torch.Tensor:
    """Kobayashi et al. 2020: ||sum_h alpha[h,i,j] f_h(x_j)||, (n, n), residual and LayerNorm left out
    (a decoder's too: its alpha, exactly 0 above the diagonal, keeps the map lower triangular)."""
    return head_sum_norms(r.alpha, r.f)


@torch.inference_mode()
def globenc_map(r: LayerRecord) -> torch.Tensor:
    """GlobEnc (Modarressi et al. 2022), one layer: (n, n) norms ||N2(N1(v_ij))||, N1 and N2 the
    LayerNorms without biases, dividing by the real LayerNorms' row scales s1_i, s2_i; the
    feed-forward skipped. Follows mohsenfayyaz/GlobEnc src/modeling/modeling_bert.py
    (post_ln_norm, post_ln2_norm). N2(N1(v)) = P v / (s1_i s2_i) is linear, so off the diagonal
    `head_sum_norms` of P f gives the norms; the diagonal adds the residual x_i."""
    p = r.parts
    g1, g2 = _gamma(p.ln_attention, r.x), _gamma(p.ln_ff, r.x)

    def project(v: torch.Tensor) -> torch.Tensor:
        return g2 * _centre(g1 * _centre(v))

    scale = _ln_scale(p.ln_attention, r.pre1) * _ln_scale(p.ln_ff, r.pre2)  # (n, 1)
    pf = project(r.f)  # (H, n, d)
    norms = head_sum_norms(r.alpha, pf)
    idx = torch.arange(r.n, device=r.x.device)
    self_alpha = r.alpha[:, idx, idx]  # (H, n): alpha[h, i, i]
    diag = (self_alpha[:, :, None] * pf).sum(0) + project(r.x)  # (n, d): P v_ii
    norms[idx, idx] = diag.norm(dim=-1)
    return norms / scale


@torch.inference_mode()
def alti_map(r: LayerRecord) -> torch.Tensor:
    """ALTI (Ferrando, Gallego, Costa-jussa 2022), one layer: (n, n) contributions
    c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1), T_i(x_j) = gamma1 * centre(v_ij) / s1_i (LN1
    linearised on row i), y_i = `mid`, LN1's real output. Follows mt-upc/transformer-contributions
    src/contributions.py (get_contributions) and src/utils_contributions.py ("min_sum"). s1 is
    LayerNorm's sqrt(var + eps); the authors' std drops eps, a relative ~1e-12 for BERT."""
    p = r.parts
    g1 = _gamma(p.ln_attention, r.x)
    inv = 1.0 / _ln_scale(p.ln_attention, r.pre1)  # (n, 1)
    u = g1 * _centre(r.f)  # (H, n, d): T's parts before the per-row scale
    ux = g1 * _centre(r.x)  # (n, d): the residual's part
    y = r.mid  # (n, d)
    y_l1 = y.abs().sum(-1)  # (n,)
    n = r.n
    out = torch.empty(n, n, dtype=y.dtype, device=y.device)
    u_j = u.transpose(0, 1).contiguous()  # (n_j, H, d)
    for i0 in range(0, n, ROW_BLOCK):
        rows = slice(i0, min(n, i0 + ROW_BLOCK))
        b = rows.stop - rows.start
        a = r.alpha_by_key[:, rows]  # (n_j, b, H)
        t = (a @ u_j).transpose(0, 1)  # (b, n_j, d): sum_h alpha u_h(x_j)
        local = torch.arange(b, device=y.device)
        t[local, local + i0] += ux[rows]  # the residual, on the diagonal
        t.mul_(inv[rows, :, None]).neg_().add_(y[rows, None, :])  # y_i - T_i(x_j)
        out[rows] = (y_l1[rows, None] - t.abs_().sum(-1)).clamp_min_(0)
    return out
