"""One token list per result: SmolLM2's byte pieces read apart in `att.tokens` and merge into the
text's characters with their weights summed and averaged as word pieces are (Clark et al. 2019);
a next-token candidate that is a byte piece names the character the model would complete it
into; e5-small's bare "▁" is a token of its own, not half of the character after it."""

from __future__ import annotations

import re

import numpy as np
import pytest

import attnviz
from attnviz.nextword import missing_bytes, next_tokens, piece_bytes
from attnviz.views import decoder as dv

from .smollm2_model import smollm2

pytestmark = pytest.mark.slow

XIAOMING = "小明把书还给了老师，因为他已经读完了。"
LIGHTHOUSE = "灯塔照亮了海面。"
ANIMAL = "动物没有过马路，因为它太累了。"
PIECE = re.compile(r"\u2039(.+) (\d+)/(\d+)\u203a")  # "‹灯 1/3›"


@pytest.fixture(scope="module")
def model() -> attnviz.PretrainedModel:
    return smollm2()


@pytest.mark.parametrize("text", [XIAOMING, LIGHTHOUSE])
def test_byte_pieces_read_apart_and_merge_into_the_texts_characters(model: attnviz.PretrainedModel, text: str) -> None:
    att = model.attend(text)
    assert att.n > len(text) and len(att.tokens) == att.n  # some characters were cut into pieces
    assert all(isinstance(tok, str) and tok for tok in att.tokens)
    for i in range(att.n - 1):
        if att.spans[i] == att.spans[i + 1]:  # two pieces of one character
            assert att.tokens[i] != att.tokens[i + 1], att.tokens
    merged = att.merge_characters()
    assert merged.tokens == list(text)
    assert "".join(text[a:b] for a, b in merged.spans) == text
    assert not any("\ufffd" in tok or "\u2039" in tok for tok in merged.tokens)


def test_each_pieces_label_names_its_character_and_its_place(model: attnviz.PretrainedModel) -> None:
    att = model.attend(LIGHTHOUSE)
    for group in att.character_groups():
        char = LIGHTHOUSE[att.spans[group[0]][0] : att.spans[group[-1]][1]]
        assert att.tokens[group[-1]] == char  # the piece that completes it reads as the character
        for k, i in enumerate(group[:-1], start=1):
            assert PIECE.fullmatch(att.tokens[i]).groups() == (char, str(k), str(len(group)))  # type: ignore[union-attr]
    assert att.tokens[:3] == ["\u2039灯 1/3\u203a", "\u2039灯 2/3\u203a", "灯"]


def test_merged_rows_sum_to_one_and_equal_a_hand_sum_of_the_raw_weights(model: attnviz.PretrainedModel) -> None:
    att = model.attend(XIAOMING)
    # the groups as a reader finds them in att.tokens: labelled pieces, then their character
    groups: list[list[int]] = []
    open_piece = False
    for i, tok in enumerate(att.tokens):
        if open_piece:
            groups[-1].append(i)
        else:
            groups.append([i])
        open_piece = PIECE.fullmatch(tok) is not None
    merged = att.merge_characters()
    assert len(groups) == merged.n == len(XIAOMING)
    w = att.weights.astype(np.float64)
    hand = np.zeros((att.n_layers, att.n_heads, len(groups), len(groups)))
    for a, rows in enumerate(groups):
        for b, cols in enumerate(groups):
            # attention to a character: summed over its pieces; from it: averaged over its pieces
            hand[:, :, a, b] = w[:, :, rows][:, :, :, cols].sum(-1).mean(-1)
    np.testing.assert_allclose(merged.weights, hand, atol=1e-6)
    np.testing.assert_allclose(merged.weights.sum(-1), 1.0, atol=1e-5)
    assert np.allclose(np.triu(merged.weights, 1), 0)  # a character still sees only those before it


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_next_word_table_names_characters_never_raw_bytes(model: attnviz.PretrainedModel, lang: str) -> None:
    found = next_tokens(model, XIAOMING, 10)
    assert [(c.token, c.probability) for c in found] == attnviz.predict(model, XIAOMING, 10)
    pieces = [c for c in found if c.piece]
    assert len(pieces) >= 3  # SmolLM2 guesses byte pieces here: the table has some to name
    for c in pieces:
        own = piece_bytes(c.token)
        assert own is not None and c.text and c.text.encode().startswith(own)
        assert (c.own_bytes, c.text_bytes) == (len(own), len(c.text.encode()))
    rows = dv.next_rows(found, lang=lang)
    labels = [str(r[attnviz.i18n.t("dec.next_token", lang)]) for r in rows]
    assert not any("<0x" in label for label in labels), labels
    assert all(c.text in label for c, label in zip(found, labels, strict=True) if c.piece)


def test_a_piece_completes_as_the_models_own_likeliest_continuation(model: attnviz.PretrainedModel) -> None:
    """The completion read over the cache equals a plain forward of the text with the piece and
    its continuation appended: at each step the likeliest token that continues the character."""
    import torch

    first = next(c for c in next_tokens(model, XIAOMING, 10) if c.piece)
    ids = model.encode(XIAOMING).inputs["input_ids"][0].tolist()
    ids.append(int(model.tokenizer.convert_tokens_to_ids(_raw(model, first.token))))
    data = piece_bytes(first.token) or b""
    while missing_bytes(data) > 0:
        with torch.inference_mode():
            hidden = model.hf_model(input_ids=torch.tensor([ids])).last_hidden_state[0, -1]
            order = torch.argsort(model.unembed(hidden), descending=True)[:64].tolist()
        for cand in order:
            more = piece_bytes(model.vocab_strings([cand])[0]) or b""
            more = more[: missing_bytes(data)]
            if more and all(0x80 <= b < 0xC0 for b in more):
                data, ids = data + more, [*ids, cand]
                break
        else:
            raise AssertionError("no continuation among the 64 likeliest")
    assert data.decode() == first.text


def _raw(model: attnviz.PretrainedModel, name: str) -> str:
    """The vocabulary entry (GPT-2's byte alphabet) of a piece that vocab_strings writes as bytes."""
    from attnviz.models.huggingface import _byte_decoder

    to_char = {b: c for c, b in _byte_decoder().items()}
    return "".join(to_char[b] for b in piece_bytes(name) or b"")


def test_e5s_bare_word_start_is_a_token_of_its_own_not_half_a_character() -> None:
    e5 = attnviz.load_model("e5-small", device="cpu")
    att = e5.attend(ANIMAL)
    assert att.tokens[:3] == ["<s>", "\u2423", "动物"]
    assert att.spans[1][0] == att.spans[1][1]  # "▁" covers no character of the text
    assert att.merge_characters() is att  # no character was cut: nothing to merge
    assert "".join(ANIMAL[a:b] for a, b in att.spans) == ANIMAL
