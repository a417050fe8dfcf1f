"""The faithfulness scoreboard of a decoder (issue 19.4): the output is the log-probability of
the next token (or of a typed continuation), held to transformers' own causal LM run here with
the removed tokens replaced by the filler token; a continuation is never removed and its
log-probability is the teacher-forced sum; each map is read at the rows that predict it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import attnviz
from attnviz import explain

from .tiny_llama import build_llama, load_llama

TEXT = "The animal didn't cross the street because it was tired."


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_llama(tmp_path_factory.mktemp("llama"))


@pytest.fixture(scope="module")
def llama(folder: Path) -> attnviz.PretrainedModel:
    return load_llama(folder)


@pytest.fixture(scope="module")
def lm(folder: Path) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager").eval()


def log_prob(lm: torch.nn.Module, ids: list[int], start: int) -> float:
    """sum_t log p(ids[t] | ids[:t]) for t >= start, from the causal LM's own logits."""
    with torch.inference_mode():
        logits = lm(input_ids=torch.tensor([ids])).logits[0].double().log_softmax(-1)
    return float(sum(logits[t - 1, ids[t]] for t in range(start, len(ids))))


def test_next_token_log_prob_is_the_output(llama: attnviz.PretrainedModel, lm: torch.nn.Module) -> None:
    sb = explain.faithfulness(llama, TEXT, steps=4, random_orders=2)
    assert sb.output == "log-probability drop"
    assert "globenc" not in sb.methods and {"alti", "value_zeroing", "norm", "gradient"} <= set(sb.methods)
    ids = llama.encode(TEXT).inputs["input_ids"][0].tolist()
    with torch.inference_mode():
        top = int(lm(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
    assert sb.target == llama.vocab_strings([top])[0]
    base = log_prob(lm, [*ids, top], len(ids))
    filler = llama.tokenizer.unk_token_id
    for j in (0, 4, len(ids) - 1):
        changed = [*ids[:j], filler, *ids[j + 1 :], top]
        assert sb.loo[j] == pytest.approx(base - log_prob(lm, changed, len(ids)), abs=1e-5)
    for row in sb.rows:
        assert row.curve[0] == 0.0 and np.isfinite(row.aopc)
    alti = explain.contributions(llama, TEXT, "alti")
    np.testing.assert_allclose(sb.row("alti").scores, alti.rolled[-1], atol=1e-6)  # the row that predicts


def test_a_continuation_is_scored_and_never_removed(llama: attnviz.PretrainedModel, lm: torch.nn.Module) -> None:
    text, continuation = "The animal didn't cross the street", " because it was"
    sb = explain.faithfulness(llama, text, continuation=continuation, steps=3, random_orders=1)
    start = len(llama.encode(text).tokens)
    assert sb.target == continuation and len(sb.tokens) > start
    assert not sb.loo[start:].any()  # the continuation stays
    ids = llama.encode(text + continuation).inputs["input_ids"][0].tolist()
    filler = llama.tokenizer.unk_token_id
    base = log_prob(lm, ids, start)
    assert sb.loo[2] == pytest.approx(base - log_prob(lm, [*ids[:2], filler, *ids[3:]], start), abs=1e-5)
    vz = explain.contributions(llama, text + continuation, "value_zeroing")
    expected = vz.rolled[start - 1 : len(ids) - 1].mean(0)  # the rows that predict the continuation
    np.testing.assert_allclose(sb.row("value_zeroing").scores, expected, atol=1e-6)


def test_a_continuation_needs_a_decoder(minilm: attnviz.PretrainedModel, llama: attnviz.PretrainedModel) -> None:
    with pytest.raises(ValueError, match="causal language model"):
        explain.faithfulness(minilm, "dog bites man", continuation=" hard")
    with pytest.raises(ValueError, match="empty"):
        explain.faithfulness(llama, TEXT, continuation="  ")
