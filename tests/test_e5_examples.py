"""Every bundled example sentence is read by the model it is offered with (at most 5 % unknown
tokens; its query and key words are tokens that model produces), each interface language starts
with its own model (e5-small for Chinese), and the explorer says when a model cannot read the
text and which offered model can. (Moved here from test_i18n.py, which held the Chinese examples
to MiniLM's ~240 CJK characters.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import i18n
from attnviz.app import literal
from attnviz.models import Runner
from attnviz.models.unknown_tokens import (
    MAX_UNKNOWN_SHARE,
    model_for_language,
    reader_for,
    tokenizer_of,
    unknown_tokens,
)

APP = str(Path(__file__).resolve().parent / "app_entry.py")
TIRED_ZH = "动物没有过马路，它太累了。"
LAB_MODEL = "scratch"  # the lab's order demo runs the from-scratch encoder (MiniLM's tokenizer)

_RUNNERS: dict[str, Runner] = {}


def _runner(name: str) -> Runner:
    if name not in _RUNNERS:
        _RUNNERS[name] = attnviz.load_model(name, device="cpu")
    return _RUNNERS[name]


def _model(lang: str) -> str:
    return str(i18n.examples(lang)["model"])


def _all_texts(lang: str) -> list[str]:
    data = i18n.examples(lang)
    texts = [data["default"], *data["order_pair"], data["minimal_pair"]["a"], data["minimal_pair"]["b"]]
    return texts + [s["text"] for s in i18n.example_sentences(lang)]


def _matches(token: str, word: str) -> bool:
    return token.lower() == word.lower() or token.lower().endswith(":" + word.lower())  # "[UNK]:它"


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_every_example_is_read_by_its_model(lang: str) -> None:
    tokenizer = tokenizer_of(_model(lang))
    for text in _all_texts(lang):
        found = unknown_tokens(tokenizer, text)
        assert found.share <= MAX_UNKNOWN_SHARE, (lang, text, found)
    assert {_model("en"), _model("zh")} == {"minilm", "e5-small"}


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_examples_name_tokens_their_model_produces(lang: str) -> None:
    model = _runner(_model(lang))
    for s in i18n.example_sentences(lang):
        tokens = model.encode(s["text"]).tokens
        assert any(_matches(t, s["query"]) for t in tokens), (s["text"], s["query"], tokens)
        assert any(_matches(t, s["key"]) for t in tokens), (s["text"], s["key"], tokens)


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_order_pair_is_a_permutation_of_distinct_known_tokens(lang: str) -> None:
    for name in (_model(lang), LAB_MODEL):
        a, b = (_runner(name).encode(s).tokens for s in i18n.examples(lang)["order_pair"])
        assert sorted(a) == sorted(b) and a != b, (name, a, b)
        assert len(set(a)) == len(a)  # the lab maps B back to A token by token
        for text in i18n.examples(lang)["order_pair"]:
            assert unknown_tokens(tokenizer_of(name), text).unknown == 0, (name, text)


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_minimal_pair_has_equal_token_length(lang: str) -> None:
    pair = i18n.examples(lang)["minimal_pair"]
    model = _runner(_model(lang))
    a, b = model.encode(pair["a"]).tokens, model.encode(pair["b"]).tokens
    assert len(a) == len(b)
    assert sum(x != y for x, y in zip(a, b, strict=True)) == 1
    for word in (pair["query"], *pair["keys"]):
        assert any(_matches(t, word) for t in a), (word, a)


def test_each_language_starts_with_its_own_model() -> None:
    offered = ["minilm", "e5-small", "scratch"]
    assert model_for_language("en", offered) == "minilm"
    assert model_for_language("zh", offered) == "e5-small"
    assert model_for_language("zh", ["minilm", "scratch"]) == "minilm"  # an allow-list without it


def test_unknown_tokens_and_the_model_that_reads_the_text() -> None:
    minilm = unknown_tokens(tokenizer_of("minilm"), TIRED_ZH)
    assert (minilm.unknown, minilm.ordinary) == (9, 13)  # the count: 11 of 13 characters, 9 tokens
    assert minilm.characters[:3] == ("动", "物", "没") and minilm.share > 0.6
    assert unknown_tokens(tokenizer_of("e5-small"), TIRED_ZH).unknown == 0
    offered = ["minilm", "e5-small", "scratch"]
    assert reader_for(TIRED_ZH, offered, "minilm") == "e5-small"
    assert reader_for(TIRED_ZH, ["minilm", "scratch"], "minilm") is None
    assert reader_for("The animal was tired.", offered, "e5-small") == "minilm"
    assert unknown_tokens(tokenizer_of("e5-small"), "rare 𠀀𠀁").unknown == 2  # one each, as e5.c
    assert tokenizer_of("bert-base-uncased") is None  # never fetched just to count


# --- the app ----------------------------------------------------------------------------------


pytestmark = pytest.mark.usefixtures("local_deployment")


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update(query)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _tokens_shown(at: AppTest) -> list[str]:
    shown = (literal.text_of(h.proto.body) for h in at.get("html"))
    return next(s for s in shown if s is not None).split(" · ")


def _warnings(at: AppTest) -> list[str]:
    return [w.value for w in at.warning]


@pytest.mark.slow
def test_a_chinese_session_reads_chinese_and_the_model_follows_the_language() -> None:
    at = _app(lang="zh")
    assert at.selectbox(key="model_choice").value == "e5-small"
    assert at.text_area(key="sentence_input").value == TIRED_ZH
    tokens = _tokens_shown(at)
    assert "它" in tokens and "动物" in tokens and not any("unk" in t.lower() for t in tokens), tokens
    assert not [w for w in _warnings(at) if "未知" in w or "不认识" in w]
    at.radio(key="lang").set_value("en").run()
    assert at.selectbox(key="model_choice").value == "minilm"
    assert "animal" in _tokens_shown(at)
    at.radio(key="lang").set_value("zh").run()
    assert at.selectbox(key="model_choice").value == "e5-small"


@pytest.mark.slow
def test_the_notice_says_what_unknown_tokens_mean_and_who_reads_the_text() -> None:
    at = _app(text=TIRED_ZH, model="minilm")
    assert at.selectbox(key="model_choice").value == "minilm"
    (notice,) = [w for w in _warnings(at) if "unknown" in w]
    assert "9 of 13 tokens (69%)" in notice and "placeholder" in notice
    assert i18n.t("model.e5", "en") in notice
    at = _app(text=TIRED_ZH, model="minilm", lang="zh")
    (notice,) = [w for w in _warnings(at) if "不认识" in w]
    assert "13 个词元中有 9 个" in notice and i18n.t("model.e5", "zh") in notice
    at = _app(text="The animal was tired.", model="e5-small")
    assert not [w for w in _warnings(at) if "unknown" in w]


@pytest.mark.slow
def test_the_chinese_minimal_pair_says_when_the_model_reads_both_sentences_the_same() -> None:
    """MiniLM reads 累 and 宽 as one [UNK]: Explain's minimal pair says so and names the model that
    reads Chinese, not "a token is not among sentence A's", and draws no grid of zeros; e5-small
    compares the pair."""
    at = _app(text=TIRED_ZH, model="minilm", lang="zh")
    at.switch_page("../pages/explain.py").run()
    assert not at.exception and i18n.t("pair.not_found", "zh") not in [e.value for e in at.error]
    assert i18n.t("pair.same_reading", "zh") in [i.value for i in at.info]
    assert any(i18n.t("model.e5", "zh") in w and "宽" in w for w in _warnings(at))
    assert not [c for c in at.get("plotly_chart") if c.proto.id.endswith("chart_pair")]
    at = _app(text=TIRED_ZH, model="e5-small", lang="zh")
    at.switch_page("../pages/explain.py").run()
    assert i18n.t("pair.same_reading", "zh") not in [i.value for i in at.info]
    assert [c for c in at.get("plotly_chart") if c.proto.id.endswith("chart_pair")]
