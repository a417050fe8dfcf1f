"""Sentence pairs: `model.attend(a, pair=b)` reads "[CLS] A [SEP] B [SEP]" with segment ids, and
`explain.pair_blocks` splits each head's attention into A->A, A->B, B->A, B->B shares."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

import attnviz
from attnviz.explain import across_share, pair_blocks, pair_segments
from attnviz.models.pairs import encode_pair
from attnviz.result import Attention

Q = "Where is the cat?"
A = "The cat sleeps on the <b>mat</b>."


@pytest.fixture(scope="module")
def pair(minilm: attnviz.PretrainedModel) -> Attention:
    return minilm.attend(Q, pair=A)


def test_pair_reads_cls_a_sep_b_sep_with_segment_ids(minilm: attnviz.PretrainedModel, pair: Attention) -> None:
    tok = minilm.tokenizer
    enc = tok(Q, A)
    assert pair.tokens[0] == "[CLS]" and pair.tokens[-1] == "[SEP]"
    assert pair.n == len(enc["input_ids"])
    sep = [i for i, t in enumerate(pair.tokens) if t == "[SEP]"]
    assert len(sep) == 2
    want = [-1] + [0] * (sep[0] - 1) + [-1] + [1] * (sep[1] - sep[0] - 1) + [-1]
    assert list(pair.segments) == want
    assert pair.text == Q + "\n" + A
    for i, (a, b) in enumerate(pair.spans):  # spans index the joined text
        if pair.segments[i] >= 0 and pair.tokens[i] == "mat":
            assert pair.text[a:b] == "mat"
    with torch.inference_mode():  # the same numbers as transformers' own forward with token_type_ids
        ids = {k: torch.tensor([v]) for k, v in enc.items()}
        assert int(ids["token_type_ids"].sum()) == sep[1] - sep[0]  # B and its [SEP] are segment 1
        ref = minilm.hf_model(**ids, output_attentions=True).attentions
    np.testing.assert_allclose(pair.weights, torch.stack([r[0] for r in ref]).numpy(), atol=1e-5)


def test_segment_ids_change_the_maps(minilm: attnviz.PretrainedModel, pair: Attention) -> None:
    enc = encode_pair(minilm, Q, A)
    inputs = dict(enc.inputs) | {"token_type_ids": torch.zeros_like(enc.inputs["token_type_ids"])}
    with torch.inference_mode():
        flat = minilm.attention_array(inputs)
    assert np.abs(flat - pair.weights).max() > 1e-3


def test_blocks_add_up_to_the_non_special_share(pair: Attention) -> None:
    blocks = pair_blocks(pair)
    assert blocks.shape == (pair.n_layers, pair.n_heads, 2, 2)
    seg = np.array(pair.segments)
    w = pair.weights.astype(np.float64)
    for r in (0, 1):
        rows = w[:, :, seg == r, :]
        ordinary_share = rows[..., seg >= 0].sum(-1).mean(-1)  # (L, H)
        np.testing.assert_allclose(blocks[:, :, r].sum(-1), ordinary_share, atol=1e-9)
    assert (blocks >= 0).all() and (blocks.sum(-1) <= 1 + 1e-6).all()
    np.testing.assert_allclose(across_share(blocks), (blocks[..., 0, 1] + blocks[..., 1, 0]) / 2)


def test_blocks_equal_a_hand_computation() -> None:
    # [CLS] a1 a2 [SEP] b1 [SEP]; one layer, one head
    tokens = ["[CLS]", "a1", "a2", "[SEP]", "b1", "[SEP]"]
    special = np.array([1, 0, 0, 1, 0, 1], dtype=bool)
    w = np.zeros((1, 1, 6, 6), dtype=np.float32)
    w[0, 0, :, 0] = 1.0  # specials' rows: all to [CLS]
    w[0, 0, 1] = [0.1, 0.2, 0.3, 0.0, 0.4, 0.0]  # a1: A 0.5, B 0.4, specials 0.1
    w[0, 0, 2] = [0.0, 0.0, 0.5, 0.2, 0.3, 0.0]  # a2: A 0.5, B 0.3, specials 0.2
    w[0, 0, 4] = [0.0, 0.6, 0.2, 0.0, 0.1, 0.1]  # b1: A 0.8, B 0.1, specials 0.1
    att = Attention(tokens=tokens, weights=w, model="m", special=special)
    assert list(pair_segments(att)) == [-1, 0, 0, -1, 1, -1]  # from the layout alone
    np.testing.assert_allclose(pair_blocks(att)[0, 0], [[0.5, 0.35], [0.8, 0.1]], atol=1e-7)
    np.testing.assert_allclose(across_share(pair_blocks(att))[0, 0], (0.35 + 0.8) / 2, atol=1e-7)


def test_layout_fallback_agrees_with_the_segments(pair: Attention) -> None:
    from dataclasses import replace

    assert list(pair_segments(replace(pair, segments=()))) == list(pair.segments)


def test_segments_survive_merging_and_dropping_specials(pair: Attention) -> None:
    dropped = pair.without_special()
    assert -1 not in dropped.segments and len(dropped.segments) == dropped.n
    merged = pair.merge_words()
    assert len(merged.segments) == merged.n and set(merged.segments) == {-1, 0, 1}


def test_what_is_not_a_pair_says_why(minilm: attnviz.PretrainedModel, tired: Attention) -> None:
    with pytest.raises(ValueError, match="sentence pair"):
        pair_blocks(tired)
    with pytest.raises(ValueError, match="two texts"):
        minilm.attend(Q, pair="   ")
    gpt = SimpleNamespace(name="gpt2", causal=True, tokenizer=minilm.tokenizer)
    with pytest.raises(ValueError, match="does not read sentence pairs"):
        encode_pair(gpt, Q, A)  # type: ignore[arg-type]
    rect = Attention(
        tokens=["a"], weights=np.ones((1, 1, 1, 2), dtype=np.float32) / 2, model="m", key_tokens=("x", "y")
    )
    with pytest.raises(ValueError, match="cross-attention"):
        pair_blocks(rect)


def test_a_long_pair_is_cut_longest_first(minilm: attnviz.PretrainedModel) -> None:
    long = " ".join(["word"] * 80)
    att = minilm.attend(Q, pair=long, max_tokens=32)
    assert att.n == 32 and att.truncated and att.n_input_tokens > 32
    assert att.segments.count(0) == len(minilm.tokenizer.tokenize(Q))  # the short question kept whole
    with pytest.raises(ValueError, match="no room"):
        minilm.attend(long, pair=long, max_tokens=3)
