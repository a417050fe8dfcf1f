"""The English and Chinese catalogues and example sentences (attnviz/locales)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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
    assert i18n.t("fig.head_n", "zh", h=3) == "头 3"  # the pickers' index, as in English
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
