"""Message catalogues: attnviz/locales/<lang>/*.json (flat key -> text, one file per feature, so
a new page brings its own file) and attnviz/locales/examples.json (the example sentence families
of each language). Both ship inside the package, so views and the CLI work from an installed wheel.

Pure lookup, no streamlit: the app layer decides which language a visitor sees.

    t("explorer.title", "zh")               # the Chinese title
    t("cost.numbers", "en", n=12, numbers="10,368")
"""

from __future__ import annotations

import json
import string
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_LANGUAGE",
    "LANGUAGES",
    "Example",
    "ExampleFamily",
    "catalogue",
    "example_for",
    "example_sentences",
    "examples",
    "language_from_locale",
    "placeholders",
    "t",
]

LANGUAGES = ("en", "zh")
DEFAULT_LANGUAGE = "en"
LOCALES = Path(__file__).resolve().parent / "locales"

Example = dict[str, str]  # {"id", "label", "text"}
ExampleFamily = dict[str, Any]  # {"id", "title", "sentences": [Example, ...], "query", "key"}


@cache
def catalogue(lang: str) -> dict[str, str]:
    """The flat key -> text mapping of one language."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; choose one of {', '.join(LANGUAGES)}")
    merged: dict[str, str] = {}
    for path in sorted((LOCALES / lang).glob("*.json")):
        for key, value in json.loads(path.read_text(encoding="utf-8")).items():
            if key.startswith("_"):  # "_comment" keys are notes
                continue
            if key in merged:
                raise ValueError(f"catalogue key {key!r} is defined twice ({lang}, second time in {path.name})")
            merged[key] = value
    return merged


def t(key: str, lang: str = DEFAULT_LANGUAGE, **fmt: Any) -> str:
    """The text for `key` in `lang`, formatted with `fmt`. A key missing from `lang` falls back
    to English, and a key missing everywhere shows as itself (a test keeps both from happening)."""
    cat = catalogue(lang if lang in LANGUAGES else DEFAULT_LANGUAGE)
    text = cat[key] if key in cat else catalogue(DEFAULT_LANGUAGE).get(key, key)
    # Layer and head indices are shown as given, counted from 0 in every language, as the
    # pickers, the exported files, the share links and the API count them.
    return text.format(**fmt) if fmt else text


def placeholders(text: str) -> set[str]:
    """Names of the `{fields}` in a catalogue string."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


@cache
def _examples() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((LOCALES / "examples.json").read_text(encoding="utf-8"))
    return data


def examples(lang: str) -> dict[str, Any]:
    """{"default": text, "families": [ExampleFamily, ...], "order_pair": [a, b],
    "minimal_pair": {"a", "b", "query", "keys"}} for one language."""
    data = _examples()
    return data[lang] if lang in data else data[DEFAULT_LANGUAGE]


def example_sentences(lang: str) -> list[Example]:
    """Every example sentence of one language, family by family."""
    return [s for fam in examples(lang)["families"] for s in fam["sentences"]]


def example_for(text: str, lang: str) -> Example | None:
    """The example whose sentence is `text`, if it is one (its query/key words then give the
    token-focus defaults, and a language switch swaps it for the same example)."""
    return next((s for s in example_sentences(lang) if s["text"] == text.strip()), None)


def language_from_locale(locale: str | None) -> str:
    """'zh', 'zh-CN', 'zh-Hans-SG', 'zh_TW' -> 'zh'; anything else (or nothing) -> 'en'."""
    if not locale:
        return DEFAULT_LANGUAGE
    primary = locale.replace("_", "-").split("-")[0].strip().lower()
    return primary if primary in LANGUAGES else DEFAULT_LANGUAGE
