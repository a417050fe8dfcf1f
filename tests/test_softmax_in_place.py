"""The in-place attention weights (attnviz/scratch.py `scaled_dot_product_attention(out=...)`, the
path of every model's eager attention in the app) are torch's softmax kernel written over the
scores: bit for bit what transformers' eager attention computes (`softmax(QK^T * scale + mask)`
in float32), in the caller's array, and equal to the step-by-step softmax of the autograd path."""

from __future__ import annotations

import numpy as np
import torch

from attnviz.scratch import scaled_dot_product_attention


def _qkv(n: int = 37, heads: int = 3, d: int = 16, seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(1, heads, n, d, generator=g) * 2 for _ in range(3))


def test_weights_in_place_are_transformers_eager_softmax_bit_for_bit() -> None:
    q, k, v = _qkv()
    n = q.shape[-2]
    mask = torch.zeros(1, 1, n, n)
    mask[..., n - 5 :] = torch.finfo(torch.float32).min  # the last five keys masked, as padding is
    out = np.empty((1, 3, n, n), dtype=np.float32)
    with torch.inference_mode():
        y, w = scaled_dot_product_attention(q, k, v, mask, out=torch.from_numpy(out))
        reference = torch.nn.functional.softmax(torch.matmul(q, k.transpose(2, 3)) * 16**-0.5 + mask, dim=-1)
    assert torch.equal(w, reference)  # transformers' eager_attention_forward: the same operations
    assert np.shares_memory(w.numpy(), out) and np.array_equal(out, reference.numpy())  # written in place
    assert torch.equal(y, torch.matmul(reference, v))
    np.testing.assert_allclose(out.sum(-1), 1.0, atol=1e-6)
    assert not out[..., n - 5 :].any()  # masked keys get exactly nothing


def test_in_place_and_autograd_paths_agree() -> None:
    q, k, v = _qkv(n=64, seed=1)
    q.requires_grad_(True)
    y_grad, w_grad = scaled_dot_product_attention(q, k, v)  # the training lab's path, step by step
    with torch.inference_mode():
        y, w = scaled_dot_product_attention(q.detach(), k, v, out=torch.empty(1, 3, 64, 64))
    torch.testing.assert_close(w, w_grad.detach(), rtol=0, atol=1e-6)
    torch.testing.assert_close(y, y_grad.detach(), rtol=0, atol=1e-5)
