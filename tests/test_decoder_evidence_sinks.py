"""Sinks of a decoder (Gu et al.: alpha_k averages column k over the queries that can see k,
taken from the result's own causal flag) and norm-based weights with grouped values, on a
tiny Llama built here: each query head's value norm through the key/value head it reads,
and the norm decomposition exact against o_proj's output."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnviz
from attnviz import explain

from .tiny_llama import build_llama, load_llama

TEXT = "The animal didn't cross the street because it was tired."


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> attnviz.PretrainedModel:
    return load_llama(build_llama(tmp_path_factory.mktemp("llama"), bias=True))


def test_sinks_average_over_the_queries_that_see_each_token(llama: attnviz.PretrainedModel) -> None:
    att = llama.attend(TEXT)
    assert att.causal
    n = att.n
    s = explain.sink_scores(att)  # causal taken from the result, no argument
    expected = att.weights.astype(np.float64).sum(-2) / (n - np.arange(n))  # Gu et al.: T - k + 1 queries (1-based)
    np.testing.assert_allclose(s.received, expected, atol=1e-7)
    np.testing.assert_allclose(s.received[..., -1], att.weights[..., -1, -1], atol=1e-7)  # only the last query sees it
    flat = explain.sink_scores(att, causal=False)  # the encoder's mean over all n queries
    np.testing.assert_allclose(flat.received, att.weights.sum(-2) / n, atol=1e-7)


def test_value_norms_read_the_shared_value_heads(llama: attnviz.PretrainedModel) -> None:
    norms = explain.norm_weights(llama, TEXT)
    att = llama.attend(TEXT)
    L, H, n = llama.n_layers, llama.n_heads, att.n
    assert norms.per_head.shape == (L, H, n, n) and norms.value_norms.shape == (L, H, n)
    cfg = llama.hf_model.config
    kv, hs = cfg.num_key_value_heads, cfg.hidden_size // H
    from .decoder_reference import layer_inputs

    with torch.inference_mode():
        for layer, x in enumerate(layer_inputs(llama, TEXT)):
            block = llama.hf_model.layers[layer]
            v = block.self_attn.v_proj(block.input_layernorm(x)).double().view(n, kv, hs)
            w_o = block.self_attn.o_proj.weight.double()  # (d, H * hs)
            for h in range(H):
                f = v[:, h // (H // kv)] @ w_o[:, h * hs : (h + 1) * hs].T  # (n, d)
                np.testing.assert_allclose(norms.value_norms[layer, h], f.norm(dim=-1).numpy(), rtol=1e-5)
    np.testing.assert_allclose(norms.per_head, att.weights * norms.value_norms[:, :, None, :], rtol=1e-5, atol=1e-7)
    for layer in range(L):
        mixed, real = explain.norm_reconstruction(llama, TEXT, layer)
        np.testing.assert_allclose(mixed, real, atol=1e-5)
    s = explain.sink_scores(att, norms=norms)
    assert np.isfinite(s.value_norms).all()
