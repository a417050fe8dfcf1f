"""Shared links are written by anyone: every URL value is parsed strictly and nothing raises."""

from __future__ import annotations

import sys
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from attnviz.app import urls

# Every character Python calls a digit or numeric but is not ASCII 0-9: superscripts, circled
# numbers, fullwidth, Arabic-Indic, Devanagari, Roman numerals, fractions... `str.isdigit` is
# True for many of them and `int()` rejects some (the crash link) or accepts others ("١").
DIGIT_ZOO = [
    chr(c)
    for c in range(sys.maxunicode + 1)
    if (chr(c).isdigit() or chr(c).isnumeric() or chr(c).isdecimal()) and not "0" <= chr(c) <= "9"
]


def test_the_zoo_holds_the_characters_that_crashed_the_parser() -> None:
    assert {"²", "①", "٣", "５", "Ⅻ", "½"} <= set(DIGIT_ZOO)
    crashing = [ch for ch in DIGIT_ZOO if ch.isdigit() and not _int_ok(ch)]
    assert crashing, "str.isdigit() accepts characters int() rejects"


def _int_ok(s: str) -> bool:
    try:
        int(s)
    except ValueError:
        return False
    return True


@given(st.text(alphabet=st.sampled_from(DIGIT_ZOO + list("0123456789")), min_size=1, max_size=6))
def test_only_ascii_digits_make_an_index(raw: str) -> None:
    value = urls.parse_index(raw)
    ascii_only = all("0" <= ch <= "9" for ch in raw)
    if ascii_only and len(raw) <= urls.MAX_INDEX_DIGITS:
        assert value == int(raw)
    else:
        assert value is None


@given(st.text(max_size=50))
def test_no_string_makes_the_parser_raise(raw: str) -> None:
    value = urls.parse_index(raw)
    assert value is None or (isinstance(value, int) and 0 <= value < 10**urls.MAX_INDEX_DIGITS)


@given(
    st.dictionaries(
        st.sampled_from(["text", "model", "lang", "layer", "head", "other"]),
        st.text(alphabet=st.characters(codec="utf-8"), max_size=300),
    )
)
def test_no_link_makes_the_link_reader_raise(params: dict[str, str]) -> None:
    link = urls.parse_link(params, max_chars=200)
    assert link.layer is None or 0 <= link.layer < 1000
    assert link.head is None or link.head == urls.MEAN or 0 <= link.head < 1000
    assert link.lang in (None, "en", "zh")
    assert link.text is None or (link.text.strip() and len(link.text) <= 200)
    assert link.model is None or len(link.model) <= 200


def test_bad_values_are_named_not_raised() -> None:
    link = urls.parse_link({"text": "   ", "model": "<script>" * 40, "layer": "²", "head": "①"}, max_chars=100)
    assert (link.text, link.model, link.layer, link.head) == (None, None, None, None)
    assert set(link.problems) == {"text", "model"}
    ok = urls.parse_link({"text": "dog bites man", "model": "scratch", "layer": "2", "head": "mean"}, 100)
    assert (ok.text, ok.model, ok.layer, ok.head, ok.problems) == ("dog bites man", "scratch", 2, urls.MEAN, ())


def test_url_carries_short_text_and_only_non_default_model() -> None:
    p = urls.url_params("dog", "minilm", "minilm", "zh", 3, urls.MEAN)
    assert p == {"text": "dog", "model": None, "lang": "zh", "layer": "3", "head": "mean"}
    long = urls.url_params("x" * (urls.URL_TEXT_MAX + 1), "scratch", "minilm", "en")
    assert long["text"] is None and long["model"] == "scratch" and long["layer"] is None


def test_normalisation_does_not_sneak_digits_in() -> None:
    # NFKC turns "²" into "2": the parser must not normalise first
    assert unicodedata.normalize("NFKC", "²") == "2" and urls.parse_index("²") is None


# --- issue 26: what a link carries and nothing uses; clamped values written back ---------------


def test_unused_params_are_every_key_but_the_used_ones() -> None:
    params = {"text": "a b", "model": "<script>", "lang": "xx", "layer": "²", "head": "3", "junk": "x" * 10}
    link = urls.parse_link(params, max_chars=100)
    assert urls.unused_params(params, link) == ["model", "lang", "layer", "junk"]
    assert urls.unused_params({"embed": "true", "text": "a"}, urls.parse_link({"text": "a"}, 10)) == []
    too_long = {"text": "y" * 101}
    assert urls.unused_params(too_long, urls.parse_link(too_long, max_chars=100)) == ["text"]


@given(st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=6))
def test_unused_params_never_raise_and_keep_only_what_the_link_uses(params: dict[str, str]) -> None:
    link = urls.parse_link(params, max_chars=50)
    kept = set(params) - set(urls.unused_params(params, link))
    assert kept <= {*urls.LINK_KEYS, "embed", "embed_options"}


def test_index_write_back_names_only_what_the_link_carries_and_differs() -> None:
    assert urls.index_write_back({"layer": "12", "head": "40"}, 5, 0) == {"layer": "5", "head": "0"}
    assert urls.index_write_back({"layer": "5"}, 5, None) == {}
    assert urls.index_write_back({"head": "3"}, 2, None) == {"head": "mean"}
    assert urls.index_write_back({}, 5, 3) == {}
