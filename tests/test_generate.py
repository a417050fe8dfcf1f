"""`attnviz.generate` held to transformers on a tiny grouped-query Llama built here and on
SmolLM2: each step's row equals the same row of one causal forward over the final sequence,
greedy tokens equal `generate(do_sample=False)`, the cache size formula equals the bytes of the
cache's tensors, a branch equals a fresh generation from the branched prefix, and a seed
repeats a sampled generation exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import attnviz
from attnviz.generation import Generation
from attnviz.generation.reference import causal_lm
from attnviz.nextword import piece_bytes

from .smollm2_model import smollm2
from .tiny_llama import build_llama, load_llama

PROMPT = "The animal didn't cross the street"


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> attnviz.PretrainedModel:
    return load_llama(build_llama(tmp_path_factory.mktemp("gen-llama"), init=0.3))


def causal_rows(model: Any, ids: tuple[int, ...]) -> np.ndarray:
    """(layers, heads, n, n) of one transformers eager forward over the whole sequence."""
    with torch.inference_mode():
        out = model.hf_model(input_ids=torch.tensor([ids]), output_attentions=True, return_dict=True)
    return torch.stack([a[0] for a in out.attentions]).numpy()


def assert_rows_match(gen: Generation, full: np.ndarray) -> None:
    for i, step in enumerate(gen.steps):
        pos = gen.n_prompt + i
        assert step.position == pos
        assert step.rows.dtype == np.float32 and step.rows.shape == (*full.shape[:2], pos + 1)
        np.testing.assert_allclose(step.rows, full[:, :, pos, : pos + 1], atol=1e-5)


def reference_greedy(model: Any, ids: list[int], steps: int) -> list[int]:
    lm = causal_lm(model)
    inputs = torch.tensor([ids])
    with torch.inference_mode():
        out = lm.generate(inputs, attention_mask=torch.ones_like(inputs), max_new_tokens=steps, do_sample=False)
    return [int(i) for i in out[0]]


def cache_tensor_bytes(gen: Generation, positions: int) -> tuple[int, int]:
    """The bytes of the cache's key and value tensors at `positions`, and of the same tensors
    with each key/value head repeated for the query heads that read it (transformers' repeat_kv)."""
    assert gen.writer is not None
    tensors = gen.writer.engine.fork(positions).tensors()  # type: ignore[attr-defined]
    assert tensors and all(t.shape[-2] == positions for t in tensors)
    groups = len(gen.kv_heads) // (int(max(gen.kv_heads)) + 1)  # type: ignore[arg-type]
    grouped = sum(t.nbytes for t in tensors)
    return grouped, sum(t.repeat_interleave(groups, dim=1).nbytes for t in tensors)


def test_every_row_is_the_causal_forwards_row_on_a_grouped_llama(llama: attnviz.PretrainedModel) -> None:
    gen = attnviz.generate(llama, PROMPT, steps=12)
    assert 1 <= len(gen.steps) <= 12 and gen.ids[: gen.n_prompt] == tuple(llama.encode(PROMPT).inputs["input_ids"][0])
    full = causal_rows(llama, gen.ids)
    assert_rows_match(gen, full)
    att = gen.attention()
    assert att.causal and att.tokens == gen.tokens and att.text == gen.text
    np.testing.assert_allclose(att.weights, full, atol=1e-6)
    assert list(att.kv_heads) == [0, 0, 1, 1]  # type: ignore[arg-type]


@pytest.mark.parametrize("prompt", [PROMPT, "dog bites man", "I sat by the river bank."])
def test_greedy_tokens_are_transformers_greedy_generate(llama: attnviz.PretrainedModel, prompt: str) -> None:
    gen = attnviz.generate(llama, prompt, steps=16)
    assert list(gen.ids) == reference_greedy(llama, list(gen.ids[: gen.n_prompt]), 16)


def test_the_cache_size_formula_is_the_bytes_of_the_caches_tensors(llama: attnviz.PretrainedModel) -> None:
    gen = attnviz.generate(llama, PROMPT, steps=6)
    for i, step in enumerate(gen.steps):
        assert (step.cache_bytes, step.cache_bytes_ungrouped) == cache_tensor_bytes(gen, gen.n_prompt + i + 1)
    assert gen.steps[-1].cache_bytes_ungrouped == 2 * gen.steps[-1].cache_bytes  # 4 query heads read 2


def test_a_branch_is_a_fresh_generation_from_the_branched_prefix(llama: attnviz.PretrainedModel) -> None:
    gen = attnviz.generate(llama, PROMPT, steps=8)
    before = (gen.ids, [s.rows.copy() for s in gen.steps])
    step = gen.steps[3]
    alt, name, p = next(
        (i, t, p) for (t, p), i in zip(step.alternatives, step.alternative_ids, strict=True) if i != step.token_id
    )
    branch = gen.branch(3, name)
    assert branch.steps[:3] == gen.steps[:3] and branch.steps[3].forced and branch.steps[3].token_id == alt
    assert branch.steps[3].probability == pytest.approx(p, abs=1e-6)
    fresh = attnviz.generate(llama, [*gen.ids[: gen.n_prompt + 3], alt], steps=4)
    assert branch.ids == fresh.ids and len(branch.steps) == 8
    for mine, theirs in zip(branch.steps[4:], fresh.steps, strict=True):
        assert mine.token_id == theirs.token_id
        np.testing.assert_allclose(mine.rows, theirs.rows, atol=1e-5)
        assert mine.probability == pytest.approx(theirs.probability, abs=1e-5)
    assert_rows_match(branch, causal_rows(llama, branch.ids))
    again = gen.branch(3, name)  # the parent's cache was not touched by the first branch
    assert again.ids == branch.ids and all(
        np.array_equal(a.rows, b.rows) for a, b in zip(again.steps, branch.steps, strict=True)
    )
    assert gen.ids == before[0] and all(np.array_equal(s.rows, r) for s, r in zip(gen.steps, before[1], strict=True))


def test_a_typed_text_is_written_token_by_token_from_the_first_step(llama: attnviz.PretrainedModel) -> None:
    gen = attnviz.generate(llama, PROMPT, steps=5)
    typed = llama.tokenizer(" the cat", add_special_tokens=False)["input_ids"]
    assert 1 < len(typed) < 5
    branch = gen.branch(0, " the cat")
    assert [s.token_id for s in branch.steps[: len(typed)]] == typed and all(
        s.forced for s in branch.steps[: len(typed)]
    )
    assert len(branch.steps) == 5
    fresh = attnviz.generate(llama, [*gen.ids[: gen.n_prompt], *typed], steps=len(branch.steps) - len(typed))
    assert branch.ids == fresh.ids
    assert_rows_match(branch, causal_rows(llama, branch.ids))
    assert gen.branch(0, typed[0]).ids[: gen.n_prompt + 1] == (*gen.ids[: gen.n_prompt], typed[0])  # by id


def test_a_seed_repeats_a_sampled_generation_and_another_seed_differs(llama: attnviz.PretrainedModel) -> None:
    one = attnviz.generate(llama, PROMPT, steps=12, temperature=1.0, seed=3)
    two = attnviz.generate(llama, PROMPT, steps=12, temperature=1.0, seed=3)
    assert one.ids == two.ids and all(np.array_equal(a.rows, b.rows) for a, b in zip(one.steps, two.steps, strict=True))
    assert attnviz.generate(llama, PROMPT, steps=12, temperature=1.0, seed=4).ids != one.ids
    greedy = attnviz.generate(llama, PROMPT, steps=12)
    assert greedy.ids != one.ids  # the draws are not the argmax...
    assert (
        attnviz.generate(llama, PROMPT, steps=12, temperature=1.0, top_k=1, seed=3).ids == greedy.ids
    )  # ...but top-1 is
    top3 = attnviz.generate(llama, PROMPT, steps=12, temperature=2.0, top_k=3, seed=3)
    assert all(s.token_id in s.alternative_ids[:3] for s in top3.steps)


def test_a_sampled_branch_draws_what_a_fresh_generation_from_its_prefix_draws(llama: attnviz.PretrainedModel) -> None:
    gen = attnviz.generate(llama, PROMPT, steps=10, temperature=1.0, seed=7)
    other = next(i for i in gen.steps[2].alternative_ids if i != gen.steps[2].token_id)
    branch = gen.branch(2, other)
    fresh = attnviz.generate(llama, [*gen.ids[: gen.n_prompt + 2], other], steps=7, temperature=1.0, seed=7)
    assert branch.ids == fresh.ids


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"steps": 0}, "steps must be"),
        ({"steps": 129}, "steps must be"),
        ({"steps": 2.5}, "steps must be"),
        ({"temperature": -0.5}, "temperature must be 0"),
        ({"temperature": float("nan")}, "finite number"),
        ({"top_k": 0}, "top_k must be"),
        ({"seed": -1}, "seed must be"),
        ({"steps": 60}, "positions; model"),  # the prompt's tokens and 60 steps pass the 64 positions
    ],
)
def test_bad_arguments_are_refused_with_a_clear_message(
    llama: attnviz.PretrainedModel, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        attnviz.generate(llama, "dog bites man again", **kwargs)


def test_an_encoder_a_long_prompt_and_a_bad_branch_are_refused(
    llama: attnviz.PretrainedModel, minilm: attnviz.PretrainedModel
) -> None:
    with pytest.raises(ValueError, match="not a causal decoder"):
        attnviz.generate(minilm, "dog bites man")
    with pytest.raises(ValueError, match="reads at most 64"):
        attnviz.generate(llama, "the cat sat on the mat " * 40)
    with pytest.raises(ValueError, match="token ids"):
        attnviz.generate(llama, [10**6])
    gen = attnviz.generate(llama, "dog bites man", steps=3)
    for step, token, message in [(3, " a", "step must be"), (0, "\x00 ", "empty"), (0, 10**6, "a token id")]:
        with pytest.raises(ValueError, match=message):
            gen.branch(step, token)


def test_smollm2_writes_as_transformers_and_its_rows_are_the_forwards(tmp_path: Path) -> None:
    model = smollm2()
    gen = attnviz.generate(model, "The capital of France is", steps=8)
    assert gen.steps[0].token == " Paris" and gen.steps[0].alternatives[0] == (" Paris", gen.steps[0].probability)
    assert list(gen.ids) == reference_greedy(model, list(gen.ids[: gen.n_prompt]), 8)
    assert_rows_match(gen, causal_rows(model, gen.ids))
    last = gen.steps[-1]
    assert (last.cache_bytes, last.cache_bytes_ungrouped) == cache_tensor_bytes(gen, last.position + 1)
    assert last.cache_bytes == 30 * 3 * 64 * 2 * 4 * (last.position + 1)  # layers, kv heads, head dim, k+v, float32
    att, read = gen.attention(), model.attend(gen.text)  # the text the model wrote reads back as written
    assert att.tokens == read.tokens == gen.tokens and att.spans == read.spans and att.word_ids == read.word_ids


def test_smollm2_writes_chinese_as_byte_pieces_labelled_with_their_character() -> None:
    model = smollm2()
    gen = attnviz.generate(model, "The capital of France is", steps=2).branch(0, "他说")
    assert gen.text.startswith("The capital of France is他说")
    assert gen.tokens[gen.n_prompt : gen.n_prompt + 4] == ["‹他 1/2›", "他", "‹说 1/2›", "说"]
    pieces = [piece_bytes(s.token) for s in gen.steps[:4]]  # named as attnviz.predict names them: "<0xE4><0xBB>"
    assert b"".join(p or b"" for p in pieces) == "他说".encode() and all(pieces)
    merged = gen.attention().merge_characters()
    assert merged.tokens[gen.n_prompt : gen.n_prompt + 2] == ["他", "说"]
