"""The English and Chinese catalogues and example sentences (attnviz/locales)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import attnviz
from attnviz import i18n

ROOT = Path(__file__).resolve().parent.parent
APP_FILES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "attnviz" / "app").rglob("*.py"))]


def test_every_key_exists_in_both_languages() -> None:
    en, zh = set(i18n.catalogue("en")), set(i18n.catalogue("zh"))
    assert not en - zh, f"missing in zh.json: {sorted(en - zh)}"
    assert not zh - en, f"missing in en.json: {sorted(zh - en)}"


def test_placeholders_are_the_same_in_both_languages() -> None:
    en, zh = i18n.catalogue("en"), i18n.catalogue("zh")
    differ = {k: (i18n.placeholders(en[k]), i18n.placeholders(zh[k])) for k in en if k in zh}
    assert {k: v for k, v in differ.items() if v[0] != v[1]} == {}


def test_no_value_is_empty_or_untranslated() -> None:
    en, zh = i18n.catalogue("en"), i18n.catalogue("zh")
    assert all(v.strip() for v in (*en.values(), *zh.values()))
    # a Chinese value with no CJK character at all is most likely a forgotten copy of the English
    copied = [k for k, v in zh.items() if not re.search(r"[\u4e00-\u9fff]", v) and v == en[k] and len(v) > 8]
    assert copied == []


def test_catalogue_text_is_safe_for_markdown() -> None:
    """Catalogue strings go through st.markdown: no `$` (LaTeX) and no `:name[` colour directives."""
    for lang in i18n.LANGUAGES:
        for key, value in i18n.catalogue(lang).items():
            assert "$" not in value, (lang, key)
            assert not re.search(r":[a-z]+\[", value), (lang, key)


def _literal_keys(source: str) -> set[str]:
    return set(re.findall(r"\bt\(\s*\"([a-z_]+\.[a-z0-9_.]+)\"", source))


def test_every_key_the_app_uses_exists() -> None:
    used = set().union(*(_literal_keys(p.read_text(encoding="utf-8")) for p in APP_FILES))
    assert len(used) > 100  # the scan found the app's keys
    # keys built with f-strings in the pages
    used |= {f"ctl.color_{v}" for v in ("fixed", "auto")}
    used |= {f"examples.{fam['id']}" for fam in i18n.examples("en")["families"]}
    used |= {f"stats.{s}" for s in ("entropy_rel", "prev", "next", "self", "cls", "sep", "punct")}
    used |= {
        f"caveats.{n}.{part}"
        for n in ("weight", "mixing", "sinks", "rest", "app")
        for part in ("title", "body", "source")
    }
    missing = sorted(k for k in used if k not in i18n.catalogue("en"))
    assert missing == []


def test_t_formats_and_falls_back() -> None:
    assert i18n.t("fig.head_n", "en", h=3) == "head 3"
    assert i18n.t("fig.head_n", "zh", h=3) == "头 3"
    assert i18n.t("no.such.key", "zh") == "no.such.key"
    assert i18n.t("nav.explorer", "fr") == i18n.t("nav.explorer", "en")


@pytest.mark.parametrize(
    ("locale", "lang"),
    [
        ("zh-CN", "zh"),
        ("zh", "zh"),
        ("zh_TW", "zh"),
        ("zh-Hans-SG", "zh"),
        ("en-US", "en"),
        ("de-DE", "en"),
        (None, "en"),
        ("", "en"),
    ],
)
def test_language_from_browser_locale(locale: str | None, lang: str) -> None:
    assert i18n.language_from_locale(locale) == lang


def test_example_families_match_across_languages() -> None:
    en, zh = i18n.examples("en"), i18n.examples("zh")

    def shape(data: dict) -> list:
        return [(f["id"], [s["id"] for s in f["sentences"]]) for f in data["families"]]

    assert shape(en) == shape(zh)
    assert en["default"] == "The animal didn't cross the street because it was tired."
    for data in (en, zh):
        assert data["default"] == data["families"][0]["sentences"][0]["text"]
        assert len(data["order_pair"]) == 2
        assert set(data["minimal_pair"]) == {"a", "b", "query", "keys"}


def _matches(token: str, word: str) -> bool:
    return token.lower() == word.lower() or token.lower().endswith(":" + word.lower())  # "[UNK]:它"


def _sentences(lang: str) -> list[dict[str, str]]:
    return [s for fam in i18n.examples(lang)["families"] for s in fam["sentences"]]


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_examples_name_tokens_the_model_produces(minilm: attnviz.PretrainedModel, lang: str) -> None:
    for s in _sentences(lang):
        tokens = minilm.attend(s["text"]).tokens
        assert any(_matches(t, s["query"]) for t in tokens), (s["text"], s["query"], tokens)
        assert any(_matches(t, s["key"]) for t in tokens), (s["text"], s["key"], tokens)


def test_chinese_examples_tokenise_to_mostly_known_tokens(minilm: attnviz.PretrainedModel) -> None:
    """MiniLM's vocabulary holds only about 240 CJK characters; the examples use those."""
    data = i18n.examples("zh")
    texts = (
        [s["text"] for s in _sentences("zh")]
        + data["order_pair"]
        + [data["minimal_pair"]["a"], data["minimal_pair"]["b"]]
    )
    for text in texts:
        att = minilm.attend(text)
        ordinary = [t for t, special in zip(att.tokens, att.special, strict=True) if not special]
        unknown = [t for t in ordinary if t.startswith("[UNK]")]
        assert len(ordinary) >= len(text.strip("。")) - 1  # one token per character
        assert len(unknown) <= len(ordinary) / 3, (text, unknown)


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_order_pair_is_a_permutation_of_distinct_tokens(minilm: attnviz.PretrainedModel, lang: str) -> None:
    a, b = (minilm.attend(s).tokens for s in i18n.examples(lang)["order_pair"])
    assert sorted(a) == sorted(b) and a != b
    assert len(set(a)) == len(a)  # the lab maps B back to A token by token


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_minimal_pair_has_equal_token_length(minilm: attnviz.PretrainedModel, lang: str) -> None:
    pair = i18n.examples(lang)["minimal_pair"]
    a, b = minilm.attend(pair["a"]), minilm.attend(pair["b"])
    assert a.n == b.n
    assert sum(x != y for x, y in zip(a.tokens, b.tokens, strict=True)) == 1
    for word in (pair["query"], *pair["keys"]):
        assert any(_matches(t, word) for t in a.tokens)
