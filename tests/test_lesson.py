"""The guided lesson's core (attnviz/lesson.py): the pronoun it follows, the referent the student
gives (or the lesson example knows), the heads it points to (the largest weight from the pronoun's
row to the referent over every head, checked against a brute-force search and against 1/n), and
the checks of the questions: on real sentences in both languages, a wrong answer is wrong and the
right one right, a tie is judged relative to the values the picture shows, a first wrong answer
gets a hint that does not give the answer away."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from attnviz import explain, i18n, lesson
from attnviz.lesson import Facts, check, check_referent, find_head, find_word, hint, known_referent, lesson_query

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


def test_the_query_is_the_first_pronoun_else_the_last_word() -> None:
    tokens = ["[CLS]", "cats", "sleep", "and", "they", "dream", ".", "[SEP]"]
    att = _attention(tokens, np.full((2, 2, 8, 8), 1 / 8))
    assert lesson_query(att, "en") == (4, True)
    no_pronoun = _attention(["[CLS]", "dogs", "bark", ".", "[SEP]"], np.full((1, 1, 5, 5), 0.2))
    assert lesson_query(no_pronoun, "en") == (2, False)  # the last word, not the full stop
    assert lesson.referent_choices(att, 4) == [1, 2, 3, 5]  # words only, the query left out


def test_the_look_head_is_chosen_without_any_referent() -> None:
    tokens = ["[CLS]", "cats", "sleep", "and", "they", "dream", ".", "[SEP]"]
    w = _rows(3, 4, len(tokens), seed=5)
    w[2, 1, 4] = [0.0, 0.1, 0.05, 0.05, 0.0, 0.75, 0.05, 0.0]  # "they" -> "dream": the most concentrated row
    pick = lesson.look_head(_attention(tokens, w), 4)
    assert (pick.layer, pick.head, pick.key) == (2, 1, 5)
    w[0, 0, 4] = [0.0, 0.0, 0.0, 0.0, 0.9, 0.0, 0.0, 0.1]  # on itself and [SEP]: not a token it looks to
    again = lesson.look_head(_attention(tokens, w), 4)
    assert (again.layer, again.head) == (2, 1)


def test_the_referent_is_never_read_off_the_attention(e5: attnviz.PretrainedModel) -> None:
    # 他 is 小明: the heads may weigh 老师 most, and the lesson must not name it.
    text = "小明把书还给了老师，因为他已经读完了。"
    att = e5.attend(text)
    q, found = lesson_query(att, "zh")
    assert found and "他" in att.tokens[q]
    assert known_referent(att, "zh", text) is None  # not an example: the student says it
    xiaoming = next(i for i, tok in enumerate(att.tokens) if "明" in tok)
    taken = check_referent(xiaoming, att.tokens, q, None)
    assert taken.right and taken.key == "lesson.why.referent_taken" and att.tokens[xiaoming] in taken.why("zh")
    facts = Facts.of(att, find_head(att, q, xiaoming))
    assert facts.key_token == att.tokens[xiaoming]  # steps 4-6 follow 小明, whatever the heads weigh most
    assert "老师" not in lesson.step_fields(facts, "zh")["k"]


@pytest.mark.parametrize(
    ("lang", "text", "word"),
    [
        ("en", "The animal didn't cross the street because it was tired.", "animal"),
        ("en", "The animal didn't cross the street because it was wide.", "street"),
        ("zh", "动物没有过马路，它太累了。", "动物"),
        ("zh", "动物没有过马路，它太宽了。", "路"),
    ],
)
def test_the_lesson_examples_know_their_referent_and_check_it(
    lang: str, text: str, word: str, minilm: attnviz.PretrainedModel, e5: attnviz.PretrainedModel
) -> None:
    att = (minilm if lang == "en" else e5).attend(text)
    q, _ = lesson_query(att, lang)
    k = known_referent(att, lang, text)
    assert k is not None and word in att.tokens[k]
    assert check_referent(k, att.tokens, q, k).right
    wrong = [i for i in lesson.referent_choices(att, q) if word not in att.tokens[i] and att.tokens[i] not in word]
    assert wrong and not any(check_referent(i, att.tokens, q, k).right for i in wrong)
    assert word in check_referent(wrong[0], att.tokens, q, k).why(lang)  # the why names it (second try)
    assert word not in hint("referent", Facts.of(att, lesson.look_head(att, q))).why(lang)  # the hint does not


def test_english_default_sentence_links_it_to_animal_above_uniform(minilm: attnviz.PretrainedModel) -> None:
    text = i18n.examples("en")["default"]
    att = minilm.attend(text)
    q, found = lesson_query(att, "en")
    k = known_referent(att, "en", text)
    assert found and k is not None and (att.tokens[q], att.tokens[k]) == ("it", "animal")
    pick = find_head(att, q, k)
    assert pick.weight == pytest.approx(float(att.weights[:, :, q, k].max()))
    assert pick.above_uniform and pick.weight > 5 / att.n  # a head that shows something, not layer 0 head 0


@pytest.mark.parametrize("text", [ZH, ZH_ALONE])
def test_chinese_sentences_find_the_token_holding_ta(e5: attnviz.PretrainedModel, text: str) -> None:
    att = e5.attend(text)
    assert not [tok for tok in att.tokens if "UNK" in tok.upper()]
    q, found = lesson_query(att, "zh")
    assert found and "它" in att.tokens[q]
    k = att.tokens.index("动物")
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


# --- every question on sentences the lesson has not seen, in both languages -----------------------

UNSEEN = [
    ("en", "The trophy would not fit in the brown suitcase because it was too big.", "trophy"),
    ("en", "Tom lent his bike to Anna because she needed it.", "anna"),
    ("en", "The bird built a nest because it wanted eggs.", "bird"),
    ("zh", "小明把书还给了老师，因为他已经读完了。", "小明"),
    ("zh", "妈妈给女儿买了一条裙子，因为她的生日快到了。", "女儿"),
    ("zh", "猫追着老鼠跑，因为它饿了。", "猫"),
]


def _referent_token(att: attnviz.Attention, word: str) -> int:
    return next(
        i
        for i, tok in enumerate(att.tokens)
        if not att.special[i]
        and (lesson.core._bare(tok) == word or (not word.isascii() and lesson.core._bare(tok) in word))
        and lesson.core._bare(tok)
    )


@pytest.mark.parametrize(("lang", "text", "word"), UNSEEN)
def test_every_question_marks_the_right_answer_right_and_a_wrong_one_wrong(
    lang: str, text: str, word: str, minilm: attnviz.PretrainedModel, e5: attnviz.PretrainedModel
) -> None:
    model = minilm if lang == "en" else e5
    att = model.attend(text)
    q, found = lesson_query(att, lang)
    assert found
    k = _referent_token(att, word)
    assert check_referent(k, att.tokens, q, None).right  # the student's own sentence: their word is taken
    look = Facts.of(att, lesson.look_head(att, q))
    pick = find_head(att, q, k)
    effect = explain.ablate(model, text, [(pick.layer, pick.head)])
    facts = Facts.of(att, pick, distances=effect.token_distance, sentence_distance=effect.sentence_distance)
    assert facts.key_token == att.tokens[k]  # the referent is the one given, never the heads' favourite
    assert facts.distances is not None
    all_right, all_wrong = ("same", "different") if look.distinct_tops == 1 else ("different", "same")
    cases = [
        ("tokens", look, att.n, att.n - 1),
        ("one_head", look, int(np.argmax(look.row)), int(np.argmin(look.row))),
        ("all_heads", look, all_right, all_wrong),
        ("pronoun", facts, int(np.argmax(facts.column)), int(np.argmin(facts.column))),
        ("switch_off", facts, int(np.argmax(facts.distances)), int(np.argmin(facts.distances))),
        ("limits", facts, "mix", "proof"),
    ]
    for step, f, right, wrong in cases:
        assert check(step, right, f, lang).right, (step, right)
        assert not check(step, wrong, f, lang).right, (step, wrong)
        told = hint(step, f).why(lang)
        assert told != check(step, wrong, f, lang).why(lang)
        if step in ("one_head", "pronoun"):  # the hint names no weight: the number is the answer's
            assert lesson.step_fields(f, lang)["w"] not in told


def test_small_distances_are_judged_relative_to_the_largest_not_within_an_absolute_margin(facts: Facts) -> None:
    # Every distance below 0.01, as with one head of MiniLM off: an absolute margin of 0.01 took all.
    small = np.array([0.0021, 0.0035, 0.0090, 0.0011, 0.0040, 0.0087, 0.0060, 0.0030])
    f = Facts.of(
        attnviz.Attention(
            tokens=list(facts.tokens), weights=_tie(facts, facts.row), model="toy", special=np.array(facts.special)
        ),
        facts.pick,
        distances=small,
        sentence_distance=0.001,
    )
    right = [i for i in range(f.n) if check("switch_off", i, f).right]
    assert right == [2, 5]  # 0.0090 and 0.0087 (3 % apart) read the same; 0.0060 does not
