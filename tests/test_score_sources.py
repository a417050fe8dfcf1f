"""attnviz.explain.score_sources: the parts of one pre-softmax score sum to the model's own score
(1e-4) on a tiny grouped-query Llama with rotary positions and biases, a tiny Qwen3 (per-head
norms on q and k), the Training lab's decoders (attention-only, and with LayerNorm and MLPs),
the scratch encoder and MiniLM (post-LayerNorm, the parts carried through each LayerNorm), and
SmolLM2 (slow). References: the rotary view's scores from the model's own q and k (a separate
pass), the lab's step-by-step scores, and the model's own attention weights (log w_ij - log w_ik
= s_ij - s_ik)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import attnviz
from attnviz import explain
from attnviz.explain.rotary import rotary_scores
from attnviz.training import train

from .smollm2_model import smollm2
from .tiny_llama import build_llama, load_llama
from .tiny_models import _byte_bpe, build

TEXT = "The animal didn't cross the street because it was tired."


def _random_biases(hf: torch.nn.Module, seed: int) -> None:
    """transformers starts biases at 0; random ones make the bias part carry something."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if name.endswith("bias"):
                p.normal_(0.0, 0.3)


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> attnviz.PretrainedModel:
    model = load_llama(build_llama(tmp_path_factory.mktemp("tiny-llama-sources"), bias=True, layers=3))
    _random_biases(model.hf_model, 1)
    return model


def _names(n_layers: int, n_heads: int, mlp: bool = True) -> list[str]:
    names = ["embed"]
    for m in range(n_layers):
        names += [f"L{m}H{h}" for h in range(n_heads)] + ([f"L{m} mlp"] if mlp else [])
    return [*names, "bias"]


def test_parts_sum_to_the_score_on_a_tiny_grouped_llama(llama: attnviz.PretrainedModel) -> None:
    for layer, head, query, key in [(0, 1, 5, 2), (1, 2, 9, 0), (2, 3, 11, 4), (2, 0, 7, 7)]:
        s = explain.score_sources(llama, TEXT, layer, head, query, key)
        reference = rotary_scores(llama, TEXT, layer)[1][head, query, key]  # its own pass, q and k hooked
        assert s.score == pytest.approx(reference, abs=1e-4) and s.model_score == pytest.approx(reference, abs=1e-4)
        assert s.kv_head == head // 2  # 4 query heads over 2 key/value heads
        assert s.query_parts == s.key_parts == _names(layer, 4)
        assert s.matrix.shape == (len(s.query_parts), len(s.key_parts))
        np.testing.assert_allclose(s.query_side.sum(), s.score, atol=1e-9)
        np.testing.assert_allclose(s.key_side.sum(), s.score, atol=1e-9)
        assert s.weight == pytest.approx(llama.attend(TEXT).weights[layer, head, query, key], abs=1e-6)
        assert abs(s.query_side[-1]) > 1e-3  # q_proj's random bias lands in the bias part
    top = s.top("key", 3)
    assert [abs(v) for _, v, _ in top] == sorted((abs(v) for _, v, _ in top), reverse=True)
    assert all(share == pytest.approx(v / s.score) for _, v, share in top)


def _qwen3(folder: Path) -> attnviz.PretrainedModel:
    """A tiny Qwen3: RMSNorm on each head's q and k before the rotation (weights made unequal)."""
    from transformers import GPT2TokenizerFast, Qwen3Config, Qwen3ForCausalLM

    tok = _byte_bpe(folder, GPT2TokenizerFast, bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    torch.manual_seed(0)
    cfg = Qwen3Config(
        vocab_size=len(tok),  # type: ignore[arg-type]
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=8, max_position_embeddings=64, tie_word_embeddings=False, initializer_range=0.3,
    )  # fmt: skip
    hf = Qwen3ForCausalLM(cfg)
    with torch.no_grad():
        for layer in hf.model.layers:
            layer.self_attn.q_norm.weight.normal_(1.0, 0.3)
            layer.self_attn.k_norm.weight.normal_(1.0, 0.3)
    hf.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))  # type: ignore[attr-defined]
    return load_llama(folder)


def test_per_head_norms_are_frozen_too(tmp_path: Path) -> None:
    model = _qwen3(tmp_path)
    for layer, head, query, key in [(0, 1, 5, 2), (1, 3, 6, 1)]:
        s = explain.score_sources(model, TEXT, layer, head, query, key)
        assert s.score == pytest.approx(rotary_scores(model, TEXT, layer)[1][head, query, key], abs=1e-4)


def _check_against_weights(model: attnviz.training.TrainedModel, text: str, layer: int, head: int, query: int) -> None:
    """Every key's parts sum to the model's score, and score differences between keys are the
    differences of the log of the model's own weights (the softmax's per-row constant cancels)."""
    w = model.attend(text).weights[layer, head, query]
    sums = []
    for key in range(query + 1):
        s = explain.score_sources(model, text, layer, head, query, key)
        assert s.score == pytest.approx(s.model_score, abs=1e-4)
        assert s.weight == pytest.approx(w[key], abs=1e-6)
        sums.append(s.score)
    np.testing.assert_allclose(np.diff(sums), np.diff(np.log(w[: query + 1].astype(np.float64))), atol=1e-4)


@pytest.mark.parametrize("options", [{}, {"mlp": True, "norm": True}], ids=["attention-only", "mlp+layernorm"])
def test_parts_sum_on_the_training_labs_decoders(options: dict[str, bool]) -> None:
    run = train("induction", 20, 3, layers=3, batch_size=16, **options)  # type: ignore[arg-type]
    model, text = run.model, run.probe.text
    _check_against_weights(model, text, 2, 1, 12)
    s = explain.score_sources(model, text, 2, 0, 12, 4)
    assert s.query_parts == _names(2, 2, mlp=bool(options))  # positions are inside "embed"


@pytest.mark.parametrize("name", ["scratch", "minilm"])
def test_post_layernorm_encoders_carry_the_parts_through_each_layernorm(
    name: str, request: pytest.FixtureRequest
) -> None:
    model = request.getfixturevalue(name)  # conftest's session copies
    text = "The cat sat on the mat because it was tired."
    for layer, head, query, key in [(0, 1, 3, 2), (3, 7, 2, 9), (5, 3, 4, 1)]:
        s = explain.score_sources(model, text, layer, head, query, key)  # an encoder: any key, before or after
        steps = model.steps(text, layer, head)  # the lab's walk through the layer, from its real input
        assert s.score == pytest.approx(float(steps["scaled"][query, key]), abs=1e-4)
        assert s.weight == pytest.approx(float(steps["weights"][query, key]), abs=1e-6)
        assert s.query_parts == _names(layer, 12)


def test_what_it_refuses(llama: attnviz.PretrainedModel, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="causal model never scores it"):
        explain.score_sources(llama, TEXT, 0, 0, 2, 5)
    with pytest.raises(ValueError, match="at most 256 tokens"):
        explain.score_sources(llama, " ".join(["street"] * 300), 0, 0, 2, 1)
    with pytest.raises(IndexError, match="layer 3"):
        explain.score_sources(llama, TEXT, 3, 0, 2, 1)
    with pytest.raises(IndexError, match="query token 40"):
        explain.score_sources(llama, TEXT, 0, 0, 40, 1)
    gpt2 = attnviz.load_model(str(build("gpt2", tmp_path / "gpt2")), device="cpu")
    with pytest.raises(ValueError, match="neither a pre-norm decoder"):
        explain.score_sources(gpt2, TEXT, 0, 0, 2, 1)


@pytest.mark.slow  # SmolLM2's 30 layers on 2 shared cores
def test_parts_sum_to_the_score_on_smollm2() -> None:
    model = smollm2()
    text = "The cat sat on the mat because it was tired."
    for layer, head, query, key in [(3, 5, 9, 5), (29, 8, 10, 10)]:
        s = explain.score_sources(model, text, layer, head, query, key)
        assert s.score == pytest.approx(rotary_scores(model, text, layer)[1][head, query, key], abs=1e-4)
        assert len(s.query_parts) == 1 + layer * 10  # embed, 9 heads and the MLP a layer; no biases


@pytest.mark.slow
def test_smollm2s_strongest_induction_head_reads_keys_a_previous_token_head_wrote() -> None:
    """On a repeated sentence, the head that looks most from the last "the" to "park" (the token
    after its first occurrence) has its key side led by a head whose kind is "previous token":
    the circuit of Olsson et al. 2022, found in the pretrained model without being told where."""
    model = smollm2()
    text = "Mary and John went to the park. Mary and John went to the"
    att = model.attend(text)
    query, key = att.n - 1, att.tokens.index("park")
    layer, head = np.unravel_index(int(np.argmax(att.weights[:, :, query, key])), att.weights.shape[:2])
    s = explain.score_sources(model, text, int(layer), int(head), query, key)
    assert s.weight > 0.5 and s.score == pytest.approx(s.model_score, abs=1e-4)
    name, _, share = s.top("key", 1)[0]
    source = tuple(int(x) for x in name[1:].split("H"))
    assert explain.head_kinds(explain.head_stats(att))[source] == "prev" and share > 0.5, (name, share)
