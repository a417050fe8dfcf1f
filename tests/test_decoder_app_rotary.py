"""The rotary distance view's numbers (attnviz/explain/rotary.py), pinned on a tiny Llama with
grouped heads built here: the recorded scores equal queries and keys computed by hand from the
layer's input (RMSNorm, projections, rotate-half rotary positions, grouped keys), their causal
softmax is the model's own attention, and the mean by distance is the mean of each diagonal."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnviz
from attnviz.explain.rotary import by_distance, rotary_distance, rotary_scores
from attnviz.views.decoder import rotary_chart

from .decoder_reference import _rope, layer_inputs
from .tiny_llama import build_llama

TEXT = "The animal didn't cross the street because it was tired."


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> attnviz.PretrainedModel:
    folder = build_llama(tmp_path_factory.mktemp("tiny-llama-rotary"), init=0.02, seed=1)
    model = attnviz.load_model(str(folder), device="cpu")
    assert isinstance(model, attnviz.PretrainedModel)
    return model


def _by_hand(model: attnviz.PretrainedModel, layer: int, rotate: bool) -> np.ndarray:
    """(H, n, n) pre-softmax scores of `layer` from its input, written from the formulas."""
    cfg = model.hf_model.config
    heads, kv, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.hidden_size // cfg.num_attention_heads
    theta = float((getattr(cfg, "rope_parameters", None) or {}).get("rope_theta", 10000.0))
    block = model.hf_model.layers[layer]
    with torch.no_grad():
        h = layer_inputs(model, TEXT)[layer].double()
        norm = block.input_layernorm
        x = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon) * norm.weight.double()
        n = x.shape[0]
        q = (x @ block.self_attn.q_proj.weight.double().T).view(n, heads, d).transpose(0, 1)
        k = (x @ block.self_attn.k_proj.weight.double().T).view(n, kv, d).transpose(0, 1)
        if rotate:
            q, k = _rope(q, theta), _rope(k, theta)
        k = k[[i // (heads // kv) for i in range(heads)]]
        scores = (q @ k.transpose(-1, -2) / d**0.5).numpy()
    scores[:, np.triu(np.ones((n, n), dtype=bool), 1)] = np.nan
    return scores


def test_recorded_scores_are_the_hand_computed_ones_and_give_the_models_attention(
    llama: attnviz.PretrainedModel,
) -> None:
    att = llama.attend(TEXT)
    for layer in range(llama.n_layers):
        tokens, rotated, plain = rotary_scores(llama, TEXT, layer)
        assert tokens == att.tokens and rotated.shape == (llama.n_heads, att.n, att.n)
        np.testing.assert_allclose(rotated, _by_hand(llama, layer, rotate=True), atol=1e-5, equal_nan=True)
        np.testing.assert_allclose(plain, _by_hand(llama, layer, rotate=False), atol=1e-5, equal_nan=True)
        z = np.nan_to_num(rotated, nan=-np.inf)
        soft = np.exp(z - z.max(-1, keepdims=True))
        np.testing.assert_allclose(soft / soft.sum(-1, keepdims=True), att.weights[layer], atol=1e-5)
        assert not np.allclose(np.nan_to_num(rotated), np.nan_to_num(plain))  # the rotation did something


def test_the_profile_is_the_mean_of_each_diagonal(llama: attnviz.PretrainedModel) -> None:
    profile = rotary_distance(llama, TEXT, layer=1, head=3)
    s = _by_hand(llama, 1, rotate=True)[3]
    n = s.shape[0]
    assert profile.kv_head == 1 and profile.skip_first
    assert profile.distances.tolist() == list(range(n - 1)) and profile.count.tolist() == list(range(n - 1, 0, -1))
    for d in (0, 1, 5, n - 2):
        expected = np.mean([s[i, i - d] for i in range(d + 1, n)])  # key 0, the sink, left out
        assert profile.mean[d] == pytest.approx(expected, abs=1e-5)
    with_first = rotary_distance(llama, TEXT, layer=1, head=3, skip_first=False)
    assert with_first.distances.size == n and with_first.mean[n - 1] == pytest.approx(s[n - 1, 0], abs=1e-5)
    assert by_distance(np.array([[1.0, np.nan], [2.0, 4.0]]), skip_first=False)[1].tolist() == [2.5, 2.0]
    fig = rotary_chart(profile, lang="zh")  # the view draws these numbers, words in the visitor's language
    assert [list(tr.y) for tr in fig.data] == [profile.mean.tolist(), profile.unrotated.tolist()]
    assert list(fig.data[0].x) == profile.distances.tolist() and "键/值头 1" in fig.layout.title.text


def test_a_model_without_rotary_positions_says_so(minilm: attnviz.PretrainedModel) -> None:
    with pytest.raises(ValueError, match="no rotary positions"):
        rotary_scores(minilm, "dog bites man", 0)
