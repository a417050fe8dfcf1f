"""Causal models through the Hugging Face runner, pinned on a tiny Llama with grouped heads
built here (no downloads): attention equal to transformers' own eager attention and to an
independent recomputation, `kv_heads`, the next word and the logit lens."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import attnviz
from attnviz.__main__ import main
from attnviz.explain import logit_lens

from .decoder_reference import reference_attention
from .tiny_models import _byte_bpe

TEXT = "The animal didn't cross the street because it was tired."


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import GPT2TokenizerFast, LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny-llama")
    tok = _byte_bpe(folder, GPT2TokenizerFast, bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok),  # type: ignore[arg-type]
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=False,
    )
    LlamaForCausalLM(cfg).save_pretrained(str(folder))
    tok.save_pretrained(str(folder))  # type: ignore[attr-defined]
    return folder


@pytest.fixture(scope="module")
def llama(llama_folder: Path) -> attnviz.PretrainedModel:
    model = attnviz.load_model(str(llama_folder), device="cpu")
    assert isinstance(model, attnviz.PretrainedModel)
    return model


@pytest.fixture(scope="module")
def reference_lm(llama_folder: Path) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(llama_folder), attn_implementation="eager").eval()


def test_grouped_heads_are_named_and_the_model_is_causal(llama: attnviz.PretrainedModel) -> None:
    att = llama.attend(TEXT)
    assert att.causal
    assert att.kv_heads is not None and att.kv_heads.tolist() == [0, 0, 1, 1]
    assert np.allclose(np.triu(att.weights, 1), 0)  # nothing from future tokens
    assert np.allclose(att.weights.sum(-1), 1, atol=1e-5)


def test_attention_equals_transformers_eager_and_the_formulas(
    llama: attnviz.PretrainedModel, reference_lm: torch.nn.Module
) -> None:
    att = llama.attend(TEXT)
    ids = llama.encode(TEXT).inputs
    with torch.inference_mode():
        eager = reference_lm(**ids, output_attentions=True).attentions
    np.testing.assert_allclose(att.weights, torch.stack([a[0] for a in eager]).numpy(), atol=1e-5, rtol=0)
    np.testing.assert_allclose(att.weights, reference_attention(llama, TEXT), atol=1e-5, rtol=0)


def test_logit_lens_last_row_is_the_models_own_prediction(
    llama: attnviz.PretrainedModel, reference_lm: torch.nn.Module
) -> None:
    with torch.inference_mode():
        logits = reference_lm(**llama.encode(TEXT).inputs).logits[0, -1].double()
    probs = logits.softmax(-1).numpy()
    best = np.argsort(-probs, kind="stable")[:5]
    lens = logit_lens(llama, TEXT, k=5)
    assert lens.probs.shape == (llama.n_layers, 5) and len(lens.tokens) == llama.n_layers
    assert all(len(row) == 5 for row in lens.tokens)
    assert lens.ids[-1].tolist() == best.tolist()
    np.testing.assert_allclose(lens.probs[-1], probs[best], atol=1e-6)
    assert lens.token == llama.attend(TEXT).tokens[-1]
    predicted = attnviz.predict(llama, TEXT, k=5)
    assert [t for t, _ in predicted] == lens.tokens[-1]
    np.testing.assert_allclose([p for _, p in predicted], probs[best], atol=1e-6)
    assert all(a >= b for (_, a), (_, b) in itertools.pairwise(predicted))


def test_logit_lens_reads_any_position(llama: attnviz.PretrainedModel, reference_lm: torch.nn.Module) -> None:
    with torch.inference_mode():
        logits = reference_lm(**llama.encode(TEXT).inputs).logits[0, 2].double()
    lens = logit_lens(llama, TEXT, position=2, k=3)
    assert lens.position == 2
    assert lens.ids[-1].tolist() == np.argsort(-logits.numpy(), kind="stable")[:3].tolist()
    with pytest.raises(IndexError):
        logit_lens(llama, TEXT, position=500)


def test_an_encoder_has_its_own_heads_and_no_next_word(minilm: attnviz.PretrainedModel) -> None:
    att = minilm.attend("dog bites man")
    assert att.kv_heads is not None and att.kv_heads.tolist() == list(range(minilm.n_heads))
    assert not att.causal
    with pytest.raises(ValueError, match="language-model head"):
        attnviz.predict(minilm, "dog bites man")
    with pytest.raises(ValueError, match="language-model head"):
        logit_lens(minilm, "dog bites man")


def test_cli_next_adds_the_top_k(
    llama_folder: Path, llama: attnviz.PretrainedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([TEXT, "--model", str(llama_folder), "--device", "cpu", "--next", "3", "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    expected = attnviz.predict(llama, TEXT, k=3)
    assert [t for t, _ in doc["next"]] == [t for t, _ in expected]
    np.testing.assert_allclose([p for _, p in doc["next"]], [p for _, p in expected], atol=1e-6)
    assert len(doc["tokens"]) == len(doc["weights"][0][0])
    assert main([TEXT, "--model", str(llama_folder), "--device", "cpu", "--next", "2"]) == 0
    assert capsys.readouterr().out.count("  next ") == 2


def test_cli_next_on_an_encoder_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dog bites man", "--next", "3"]) == 2
    err = capsys.readouterr().err
    assert "language-model head" in err and "Traceback" not in err and err.count("\n") == 1
    assert main(["dog bites man", "--next", "0"]) == 2
