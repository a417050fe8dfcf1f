"""The guided lesson's core (attnviz/lesson.py): the pronoun and antecedent it follows, the head it
points to (the largest weight from the pronoun's row to the antecedent over every head, checked
against a brute-force search and against 1/n), and the checks of the six questions."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from attnviz import i18n, lesson
from attnviz.lesson import Facts, check, find_head, find_word, lesson_pair

ZH = "动物没有过马路，因为它太累了。"  # XLM-R makes 因为它 one token
ZH_ALONE = "动物没有过马路，它太累了。"  # the app's example: 它 stands alone


def _attention(tokens: list[str], weights: np.ndarray, special: list[bool] | None = None) -> attnviz.Attention:
    n = len(tokens)
    flags = np.array(special if special is not None else [i in (0, n - 1) for i in range(n)], dtype=bool)
    return attnviz.Attention(tokens=tokens, weights=weights.astype(np.float32), model="toy", special=flags)


def _rows(L: int, H: int, n: int, seed: int = 0) -> np.ndarray:
    w = np.random.default_rng(seed).random((L, H, n, n))
    return w / w.sum(-1, keepdims=True)


@pytest.fixture(scope="module")
def e5() -> attnviz.PretrainedModel:
    return attnviz.load_model("e5-small", device="cpu")


# --- finding words, the pronoun and the head -----------------------------------------------------


def test_find_word_takes_whole_tokens_and_the_token_holding_a_chinese_word() -> None:
    tokens = ["[CLS]", "with", "it", "##s", "▁it", "[SEP]"]
    assert find_word(tokens, "it") == 2  # never "it" inside "with"
    assert find_word(tokens, "IT", start=3) == 4  # the SentencePiece mark is ignored
    assert find_word(["<s>", "动物", "因为它", "累", "</s>"], "它") == 2  # inside 因为它
    assert find_word(["[CLS]", "[UNK]:它", "[SEP]"], "它") == 1
    assert find_word(["[CLS]", "dog", "[SEP]"], "cat") is None
    assert find_word(["it", "x"], "it", special=np.array([True, False])) is None  # specials are not words


def test_find_head_is_the_largest_weight_from_query_to_key_over_every_head() -> None:
    tokens = ["[CLS]", "the", "animal", "was", "tired", "because", "it", "[SEP]"]
    w = _rows(3, 4, len(tokens))
    q, k = 6, 2
    pick = find_head(_attention(tokens, w), q, k)
    brute = max((w[layer, head, q, k], layer, head) for layer in range(3) for head in range(4))
    assert (pick.layer, pick.head) == (brute[1], brute[2])
    assert pick.weight == pytest.approx(brute[0], abs=1e-6)
    assert pick.uniform == pytest.approx(1 / len(tokens)) and pick.ratio == pytest.approx(pick.weight * len(tokens))
    with pytest.raises(IndexError):
        find_head(_attention(tokens, w), q, len(tokens))


def test_the_pair_falls_back_to_the_word_the_heads_weigh_most_before_the_pronoun() -> None:
    tokens = ["[CLS]", "cats", "sleep", "and", "they", "dream", ".", "[SEP]"]
    w = np.full((2, 2, 8, 8), 1 / 8)
    w[:, :, 4, :] = 0.0
    w[:, :, 4, 2] = 0.7  # "they" looks at "sleep" most, on average over heads
    w[:, :, 4, 1] = 0.3
    att = _attention(tokens, w)
    assert lesson_pair(att, "en", "animal") == (4, 2, True)  # no "animal": the heads decide
    assert lesson_pair(att, "en", "cats") == (4, 1, True)  # the lesson's word, where the sentence has it
    no_pronoun = _attention(["[CLS]", "dogs", "bark", ".", "[SEP]"], np.full((1, 1, 5, 5), 0.2))
    query, key, found = lesson_pair(no_pronoun, "en", "animal")
    assert (query, found) == (2, False) and key == 1  # the last word (not the full stop), a word before it


def test_english_default_sentence_points_minilm_to_a_head_linking_it_to_animal(minilm: attnviz.PretrainedModel) -> None:
    text = i18n.examples("en")["default"]
    att = minilm.attend(text)
    q, k, found = lesson_pair(att, "en", lesson.antecedent_word("en"))
    assert found and (att.tokens[q], att.tokens[k]) == ("it", "animal")
    pick = find_head(att, q, k)
    assert pick.weight == pytest.approx(float(att.weights[:, :, q, k].max()))
    assert pick.above_uniform and pick.weight > 5 / att.n  # a head that shows something, not layer 0 head 0


@pytest.mark.parametrize("text", [ZH, ZH_ALONE])
def test_chinese_sentences_point_e5_to_a_head_linking_ta_to_dongwu(e5: attnviz.PretrainedModel, text: str) -> None:
    att = e5.attend(text)
    assert not [tok for tok in att.tokens if "UNK" in tok.upper()]
    q, k, found = lesson_pair(att, "zh", lesson.antecedent_word("zh"))
    assert found and "它" in att.tokens[q] and att.tokens[k] == "动物"
    pick = find_head(att, q, k)
    assert pick.above_uniform and pick.weight == pytest.approx(float(att.weights[:, :, q, k].max()))


# --- the questions' checks ---------------------------------------------------------------------


@pytest.fixture
def facts() -> Facts:
    tokens = ["[CLS]", "the", "animal", "was", "tired", "because", "it", "[SEP]"]
    w = _rows(2, 3, len(tokens), seed=3)
    w[1, 2, 6] = [0.05, 0.05, 0.6, 0.05, 0.05, 0.05, 0.1, 0.05]  # layer 1 head 2: "it" -> "animal"
    att = _attention(tokens, w)
    pick = find_head(att, 6, 2)
    distances = np.array([0.01, 0.02, 0.03, 0.0, 0.01, 0.02, 0.4, 0.01])
    return Facts.of(att, pick, distances=distances, sentence_distance=0.05, norm_row=np.full(8, 1 / 8))


def test_each_question_is_right_only_for_what_the_picture_shows(facts: Facts) -> None:
    assert (facts.pick.layer, facts.pick.head) == (1, 2)
    assert check("tokens", 8, facts).right and not check("tokens", 6, facts).right
    assert check("one_head", 2, facts).right and not check("one_head", 6, facts).right
    assert check("all_heads", "different", facts).right and not check("all_heads", "same", facts).right
    assert check("pronoun", 1 * 3 + 2, facts).right and not check("pronoun", 0, facts).right
    assert check("switch_off", 6, facts).right and not check("switch_off", 2, facts).right
    assert check("limits", "mix", facts).right
    assert not check("limits", "proof", facts).right and not check("limits", "nothing", facts).right
    with pytest.raises(ValueError):
        check("nonsense", 1, facts)


def test_a_tie_in_the_picture_accepts_either_token(facts: Facts) -> None:
    row = facts.row.copy()
    row[3] = row[2] - 0.005  # two cells the eye cannot tell apart
    tied = Facts.of(
        attnviz.Attention(
            tokens=list(facts.tokens), weights=_tie(facts, row), model="toy", special=np.array(facts.special)
        ),
        facts.pick,
    )
    assert (
        check("one_head", 3, tied).right and check("one_head", 2, tied).right and not check("one_head", 5, tied).right
    )


def _tie(facts: Facts, row: np.ndarray) -> np.ndarray:
    L, H = facts.column.shape
    w = np.full((L, H, facts.n, facts.n), 1 / facts.n, dtype=np.float32)
    w[facts.pick.layer, facts.pick.head, facts.pick.query] = row
    return w


def test_the_why_names_the_numbers_of_the_sentence_in_both_languages(facts: Facts) -> None:
    verdict = check("pronoun", 5, facts, "en")
    why = verdict.why("en")
    assert "layer 1, head 2" in why and "“animal”" in why and "60%" in why and "1/8 = 12%" in why and "4.8" in why
    zh = check("pronoun", 5, facts, "zh").why("zh")
    assert "「animal」" in zh and "60%" in zh
    assert check("tokens", 8, facts).why("en").startswith("The model sees 8 tokens: 6 from your text and 2 special")
    escaped = check("one_head", 2, facts).why("en", lambda s: f"<{s}>")
    assert "“<animal>”" in escaped  # every field goes through the caller's escape


def test_a_model_whose_heads_cannot_be_switched_off_has_nothing_to_check(facts: Facts) -> None:
    bare = Facts.of(
        attnviz.Attention(
            tokens=list(facts.tokens), weights=_tie(facts, facts.row), model="toy", special=np.array(facts.special)
        ),
        facts.pick,
    )
    verdict = check("switch_off", 6, bare)
    assert not verdict.right and verdict.key == "lesson.why.switch_off_none"
