"""Heads switched off in a decoder with grouped heads (issue 19.4): a query head's slice of
o_proj's input, held equal to an independent forward pre-hook written here; the sweep of
head_importance equals it head by head; a causal model refuses mean ablation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import attnviz
from attnviz import explain

from .tiny_llama import build_llama, load_llama

TEXT = "The animal didn't cross the street because it was tired."


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> attnviz.PretrainedModel:
    return load_llama(build_llama(tmp_path_factory.mktemp("llama")))


def final_with_hook(model: attnviz.PretrainedModel, off: list[tuple[int, int]]) -> torch.Tensor:
    """The final hidden states (n, d) with each listed head's slice of o_proj's input zeroed by
    a pre-hook on transformers' own o_proj."""
    hs = model.hf_model.config.hidden_size // model.n_heads

    def zero(heads: list[int]) -> Any:
        def hook(_m: Any, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
            x = args[0].clone()
            for h in heads:
                x[..., h * hs : (h + 1) * hs] = 0.0
            return (x, *args[1:])

        return hook

    layers = sorted({lay for lay, _ in off})
    handles = [
        model.hf_model.layers[lay].self_attn.o_proj.register_forward_pre_hook(zero([h for ly, h in off if ly == lay]))
        for lay in layers
    ]
    try:
        with torch.inference_mode():
            return model.hf_model(**model.encode(TEXT).inputs).last_hidden_state[0].double()
    finally:
        for h in handles:
            h.remove()


def distances(base: torch.Tensor, switched: torch.Tensor) -> tuple[np.ndarray, float]:
    cos = torch.nn.functional.cosine_similarity
    tokens = (1 - cos(switched, base, dim=-1)).clamp_min(0).numpy()
    sentence = float((1 - cos(switched.mean(0), base.mean(0), dim=0)).clamp_min(0))
    return tokens, sentence


def test_ablate_equals_an_independent_hook(llama: attnviz.PretrainedModel) -> None:
    base = final_with_hook(llama, [])
    for off in ([(0, 1)], [(1, 2), (1, 3)], [(0, 0), (1, 1)]):
        got = explain.ablate(llama, TEXT, off)
        tokens, _ = distances(base, final_with_hook(llama, off))
        np.testing.assert_allclose(got.token_distance, tokens, atol=1e-6)
        assert got.measure == "next_token"  # its effect: tests/test_decoder_ablation_next_token.py
        assert got.token_distance.max() > 1e-4  # the switch did something
    unchanged = explain.ablate(llama, TEXT, [(1, 0)]).attention.weights[:2]  # layers up to the switch
    np.testing.assert_allclose(unchanged, llama.attend(TEXT).weights[:2], atol=1e-6)


def test_head_importance_equals_the_hook_head_by_head(llama: attnviz.PretrainedModel) -> None:
    imp = explain.head_importance(llama, TEXT)
    assert imp.shape == (llama.n_layers, llama.n_heads)
    base = final_with_hook(llama, [])
    for layer in range(llama.n_layers):
        for head in range(llama.n_heads):
            tokens, _ = distances(base, final_with_hook(llama, [(layer, head)]))
            assert imp.token_effect[layer, head] == pytest.approx(tokens.mean(), abs=1e-6)
    assert np.isfinite(imp.gradient).all() and imp.gradient.max() > 0
    curves = explain.pruning_curves(llama, TEXT, imp, points=4)
    assert curves["effect"].token_distance[0] == 0.0 and curves["effect"].k[-1] == llama.n_layers * llama.n_heads
    everything = [(lay, hd) for lay in range(llama.n_layers) for hd in range(llama.n_heads)]
    assert curves["effect"].token_distance[-1] == pytest.approx(
        distances(base, final_with_hook(llama, everything))[0].mean(), abs=1e-6
    )


def test_a_causal_model_refuses_mean_ablation(llama: attnviz.PretrainedModel) -> None:
    with pytest.raises(ValueError, match="later tokens"):
        explain.ablate(llama, TEXT, [(0, 0)], mode="mean")
    with pytest.raises(ValueError, match="later tokens"):
        explain.head_importance(llama, TEXT, mode="mean")
