"""`attnviz.generate` on the training lab's decoders (no KV cache: the whole sequence runs again
each step), and the sequence's tokens read as the runner reads a text: one character a token
(Chinese included) and one space-separated symbol a token."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnviz
from attnviz.generation.sequence import sequence_encoding
from attnviz.training import TrainingRun, train

from .smollm2_model import smollm2

TEXT = "the cat sat on the mat. 猫坐在垫子上。 the dog ran to the cat. " * 3


@pytest.fixture(scope="module")
def chars() -> TrainingRun:
    return train("text", 20, 0, batch_size=8, text=TEXT)


@pytest.fixture(scope="module")
def symbols() -> TrainingRun:
    return train("copy", 20, 0, batch_size=8)


def test_a_character_model_writes_and_its_rows_are_its_forwards(chars: TrainingRun) -> None:
    model = chars.model
    gen = attnviz.generate(model, "the cat", steps=10)
    assert gen.tokens[0] == "<s>" and len(gen.steps) == 10
    with model.gate.interactive(), torch.inference_mode():
        full = model.attention_array(model.encode(gen.text).inputs)  # the text reads back as the same tokens
    for step in gen.steps:
        np.testing.assert_allclose(step.rows, full[:, :, step.position, : step.position + 1], atol=1e-6)
    read = model.attend(gen.text)
    att = gen.attention()
    assert att.tokens == read.tokens == gen.tokens and att.spans == read.spans and att.word_ids == read.word_ids
    np.testing.assert_allclose(att.weights, read.weights, atol=1e-6)
    cfg = model.decoder.cfg  # what a cache of its keys and values would hold: every head its own
    per_position = cfg.n_layers * cfg.n_heads * (cfg.d_model // cfg.n_heads) * 2 * 4
    assert [s.cache_bytes for s in gen.steps] == [per_position * (s.position + 1) for s in gen.steps]
    assert all(s.cache_bytes == s.cache_bytes_ungrouped for s in gen.steps)


def test_a_character_models_branch_is_a_fresh_generation_from_its_prefix(chars: TrainingRun) -> None:
    model = chars.model
    gen = attnviz.generate(model, "the cat", steps=8, temperature=1.0, seed=2)
    branch = gen.branch(2, "猫坐")
    assert [s.token for s in branch.steps[2:4]] == ["猫", "坐"] and branch.tokens[gen.n_prompt + 2 :][:2] == [
        "猫",
        "坐",
    ]
    fresh = attnviz.generate(model, list(branch.ids[: gen.n_prompt + 4]), steps=4, temperature=1.0, seed=2)
    assert fresh.ids == branch.ids
    for mine, theirs in zip(branch.steps[4:], fresh.steps, strict=True):
        np.testing.assert_allclose(mine.rows, theirs.rows, atol=1e-6)


def test_a_symbol_models_tokens_and_spans_are_the_runners(symbols: TrainingRun) -> None:
    model = symbols.model
    prompt = symbols.probe.text.split(">")[0] + ">"
    gen = attnviz.generate(model, prompt, steps=4)
    assert gen.text.startswith(prompt + " ") and len(gen.text.split()) == len(gen.tokens) - 1  # <s> is no word
    read, att = model.attend(gen.text), gen.attention()
    assert att.tokens == read.tokens and att.spans == read.spans and att.word_ids == read.word_ids
    assert int(gen.steps[0].rows.shape[-1]) == gen.n_prompt + 1


@pytest.mark.parametrize(
    "text", ["The animal didn't cross the street. 他说你好", "emoji 🙂 and 灯 fin", "  two  spaces\nand a line"]
)
def test_an_encoding_built_from_ids_is_the_runners_encoding_of_the_text(text: str) -> None:
    """Byte pieces, a bare space token, emoji: every cut of the text's tokens into a prompt and
    the tokens after it gives the runner's tokens, spans, word ids and special marks."""
    model = smollm2()
    whole = model.encode(text)
    ids = whole.inputs["input_ids"][0].tolist()
    prefixes = {k: model.tokenizer.decode(ids[:k]) for k in range(1, len(ids))}
    cuts = [k for k, p in prefixes.items() if p.strip() and model.encode(p).inputs["input_ids"][0].tolist() == ids[:k]]
    assert len(cuts) > len(ids) // 2
    for k in cuts:
        built = sequence_encoding(model, ids, model.encode(prefixes[k]))
        assert built.text == whole.text and built.tokens == whole.tokens and built.spans == whole.spans
        assert built.word_ids == whole.word_ids and list(built.special) == list(whole.special)
    from_ids = sequence_encoding(model, ids)
    assert from_ids.tokens == whole.tokens and from_ids.spans == whole.spans
