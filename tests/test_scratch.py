"""The from-scratch attention against torch's reference and the invariants of REFERENCES.md."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from attnviz.scratch import (
    EncoderConfig,
    MultiHeadSelfAttention,
    ScratchEncoder,
    causal_mask,
    scaled_dot_product_attention,
    sinusoidal_positions,
)


def _copy_into_torch_mha(ours: MultiHeadSelfAttention, d_model: int) -> nn.MultiheadAttention:
    ref = nn.MultiheadAttention(d_model, ours.n_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.query.weight, ours.key.weight, ours.value.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.query.bias, ours.key.bias, ours.value.bias]))
        ref.out_proj.weight.copy_(ours.output.weight)
        ref.out_proj.bias.copy_(ours.output.bias)
    return ref.eval()


@pytest.mark.parametrize(
    ("batch", "n", "d_model", "n_heads"),
    [(3, 5, 16, 1), (2, 6, 512, 8), (2, 10, 64, 2), (2, 7, 48, 4)],
    ids=["one-head-16", "d512-dk64", "two-heads-of-32", "four-heads-of-12"],
)
@pytest.mark.parametrize("masking", ["none", "padding", "causal", "both"])
def test_equals_torch_multihead_attention(batch: int, n: int, d_model: int, n_heads: int, masking: str) -> None:
    torch.manual_seed(0)
    ours = MultiHeadSelfAttention(d_model, n_heads).eval()
    ref = _copy_into_torch_mha(ours, d_model)
    x = torch.randn(batch, n, d_model)
    keep = torch.ones(batch, n, dtype=torch.long)
    keep[0, -2:] = 0  # two padding positions in the first sequence
    use_pad = masking in ("padding", "both")
    causal = masking in ("causal", "both")
    with torch.no_grad():
        y, w = ours(x, keep if use_pad else None, causal=causal)
        y_ref, w_ref = ref(
            x,
            x,
            x,
            key_padding_mask=(keep == 0) if use_pad else None,
            attn_mask=torch.ones(n, n, dtype=torch.bool).triu(1) if causal else None,
            need_weights=True,
            average_attn_weights=True,
        )
    assert w.shape == (batch, n_heads, n, n)
    torch.testing.assert_close(y, y_ref, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(w.mean(1), w_ref, atol=1e-6, rtol=1e-5)


def test_textbook_module_shapes() -> None:
    """The three modules of the source chapter are instances of one class."""
    for shape, d_model, n_heads, head_dim in [
        ((3, 5, 16), 16, 1, 16),
        ((2, 6, 512), 512, 8, 64),
        ((2, 10, 64), 64, 4, 32),
    ]:
        m = MultiHeadSelfAttention(d_model, n_heads, head_dim=head_dim)
        y, w = m(torch.randn(*shape))
        assert y.shape == shape
        assert w.shape == (shape[0], n_heads, shape[1], shape[1])


def test_rows_sum_to_one_under_causal_and_padding_masks() -> None:
    torch.manual_seed(1)
    m = MultiHeadSelfAttention(32, 4)
    keep = torch.tensor([[1, 1, 1, 1, 0, 0]])
    _, w = m(torch.randn(1, 6, 32), keep, causal=True)
    torch.testing.assert_close(w.sum(-1), torch.ones(1, 4, 6))
    assert torch.all(w.triu(1) == 0), "causal maps must be zero above the diagonal"
    assert torch.all(w[..., 4:] == 0), "padding columns must get zero weight"


def test_mask_uses_finite_minimum_so_half_precision_works() -> None:
    m = causal_mask(4, torch.float16)
    assert torch.isfinite(m).all()
    q = k = v = torch.randn(1, 4, 8, dtype=torch.float16)
    _, w = scaled_dot_product_attention(q, k, v, m)
    assert torch.isfinite(w).all() and torch.all(w.triu(1) == 0)


def test_permutation_equivariance_without_positions() -> None:
    """A(PX) = P A(X) P^T and Y(PX) = P Y(X) when there is no positional information."""
    torch.manual_seed(2)
    m = MultiHeadSelfAttention(24, 3).eval()
    x = torch.randn(1, 7, 24)
    perm = torch.randperm(7)
    with torch.no_grad():
        y, w = m(x)
        yp, wp = m(x[:, perm])
    torch.testing.assert_close(wp, w[:, :, perm][:, :, :, perm], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(yp, y[:, perm], atol=1e-5, rtol=1e-5)


def _row_entropy(w: torch.Tensor) -> torch.Tensor:
    return -(w * torch.log(w.clamp_min(1e-30))).sum(-1).mean()


def test_removing_the_scaling_lowers_entropy_for_dk_64() -> None:
    torch.manual_seed(3)
    d_k = 64
    q, k, v = torch.randn(3, 1, 32, d_k).unbind(0)  # unit-variance components
    _, scaled = scaled_dot_product_attention(q, k, v, scale=True)
    _, unscaled = scaled_dot_product_attention(q, k, v, scale=False)
    assert (q @ k.transpose(-2, -1)).var().item() == pytest.approx(d_k, rel=0.25)  # q.k has variance d_k
    assert _row_entropy(unscaled) < _row_entropy(scaled) - 1.0
    # the largest weight of a row moves towards 1: the softmax saturates
    assert unscaled.max(-1).values.mean() > scaled.max(-1).values.mean() + 0.4


def test_sinusoidal_positions_follow_the_formula() -> None:
    pe = sinusoidal_positions(50, 16)
    assert pe.shape == (50, 16)
    p, i = 7, 3
    assert pe[p, 2 * i].item() == pytest.approx(math.sin(p / 10000 ** (2 * i / 16)), abs=1e-6)
    assert pe[p, 2 * i + 1].item() == pytest.approx(math.cos(p / 10000 ** (2 * i / 16)), abs=1e-6)
    assert torch.all(pe[0, 1::2] == 1)


def test_encoder_with_positions_off_is_permutation_equivariant() -> None:
    torch.manual_seed(4)
    enc = ScratchEncoder(
        EncoderConfig(vocab_size=50, d_model=32, n_heads=4, d_ff=64, n_layers=2, positions=False)
    ).eval()
    ids = torch.randint(0, 50, (1, 9))
    perm = torch.randperm(9)
    with torch.no_grad():
        _, maps = enc(ids)
        _, maps_p = enc(ids[:, perm])
    for a, ap in zip(maps, maps_p, strict=True):
        torch.testing.assert_close(ap, a[:, :, perm][:, :, :, perm], atol=1e-5, rtol=1e-4)


def test_encoder_with_positions_on_is_not_permutation_equivariant() -> None:
    torch.manual_seed(5)
    enc = ScratchEncoder(
        EncoderConfig(vocab_size=50, d_model=32, n_heads=4, d_ff=64, n_layers=2, sinusoidal=True)
    ).eval()
    ids = torch.randint(0, 50, (1, 9))
    perm = torch.arange(8, -1, -1)
    with torch.no_grad():
        _, maps = enc(ids)
        _, maps_p = enc(ids[:, perm])
    assert (maps_p[-1] - maps[-1][:, :, perm][:, :, :, perm]).abs().max() > 1e-3


def test_inputs_embeds_equal_the_word_embedding_path() -> None:
    torch.manual_seed(6)
    enc = ScratchEncoder(EncoderConfig(vocab_size=50, d_model=32, n_heads=4, d_ff=64, n_layers=2)).eval()
    ids = torch.randint(0, 50, (2, 6))
    with torch.no_grad():
        h1, _ = enc(ids)
        h2, _ = enc(inputs_embeds=enc.word_embeddings(ids))
    torch.testing.assert_close(h1, h2)


def test_from_bert_state_dict_rejects_other_checkpoints() -> None:
    with pytest.raises(ValueError, match="not a BERT checkpoint"):
        ScratchEncoder.from_bert_state_dict({"foo": torch.zeros(1)}, EncoderConfig(n_layers=1))
