"""One numbering: a layer or head is named by the index the pickers, the API, CSV and links use
(counted from 0), in every catalogue string and every figure, in English and in Chinese alike."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from attnviz import i18n, lesson, views
from attnviz.lesson.handout import handout_html
from attnviz.result import Attention
from attnviz.views import grid_canvas

# The fields that carry a layer or head index, with values whose +1 (8, 5, 3) is none of them:
# a text counting from 1 shows a digit that is not here.
INDEX = {"layer": 7, "head": 4, "h": 4, "kv": 2}
TOKENS = ["[CLS]", "the", "cat", "sat", "because", "it", "was", "tired", "[SEP]"]
LAYERS, HEADS = 4, 6
CHOSEN = (2, 3)  # the head the lesson picks in `att` below: neither index is a count of anything


def numbers(text: str) -> list[int]:
    """The integers a text shows, in order (markup dropped)."""
    return [int(d) for d in re.findall(r"\d+", re.sub(r"<[^>]*>", " ", text))]


def first_line(text: str) -> str:
    return text.split("<br>")[0]


@pytest.fixture(scope="module")
def att() -> Attention:
    """A synthetic 4 x 6 model on 9 tokens whose head (2, 3) links "it" (5) to "cat" (2) most."""
    rng = np.random.default_rng(0)
    n = len(TOKENS)
    w = rng.dirichlet(np.ones(n), size=(LAYERS, HEADS, n)).astype(np.float32) * 0.5  # rows sum to 0.5
    w[..., 0] += 0.5  # the rest on [CLS], so no row's largest weight is near the planted one
    w[CHOSEN[0], CHOSEN[1], 5] = 0.0
    w[CHOSEN[0], CHOSEN[1], 5, 2] = 0.9
    w[CHOSEN[0], CHOSEN[1], 5, 0] = 0.1
    special = np.array([t in ("[CLS]", "[SEP]") for t in TOKENS])
    return Attention(tokens=TOKENS, weights=w, model="synthetic", special=special, text="the cat sat")


def _index_keys(lang: str) -> dict[str, str]:
    return {k: v for k, v in i18n.catalogue(lang).items() if i18n.placeholders(v) & INDEX.keys()}


def test_every_layer_and_head_field_shows_its_index_unchanged() -> None:
    """Every catalogue string with a layer/head/kv field, filled with known indices (and digit-free
    words elsewhere), shows exactly those indices besides the digits written in the string."""
    wrong = {}
    for lang in i18n.LANGUAGES:
        keys = _index_keys(lang)
        assert {"fig.layer_head", "fig.head_n", "abl.switch_off", "sinks.caveat"} <= keys.keys()  # the scan works
        for key, text in keys.items():
            fields = i18n.placeholders(text)
            shown = i18n.t(key, lang, **{f: INDEX.get(f, "·") for f in fields})
            literal = numbers(re.sub(r"\{[^}]*\}", " ", text))
            extra = Counter(numbers(shown)) - Counter(literal)
            want = Counter(INDEX[f] for f in fields if f in INDEX for _ in range(text.count("{" + f)))
            if extra != want:
                wrong[lang, key] = shown
    assert wrong == {}


def test_english_and_chinese_show_the_same_numbers_for_every_index_field() -> None:
    en, zh = _index_keys("en"), _index_keys("zh")
    assert en.keys() == zh.keys()
    for key in en:
        fields = i18n.placeholders(en[key])
        fill = {f: INDEX.get(f, "·") for f in fields}
        a, b = (i18n.t(key, lang, **fill) for lang in ("en", "zh"))
        literal = Counter(numbers(re.sub(r"\{[^}]*\}", " ", en[key])))
        literal_zh = Counter(numbers(re.sub(r"\{[^}]*\}", " ", zh[key])))
        assert Counter(numbers(a)) - literal == Counter(numbers(b)) - literal_zh, key


def test_no_catalogue_counts_a_layer_or_head_as_an_ordinal() -> None:
    for lang in i18n.LANGUAGES:
        for key, text in i18n.catalogue(lang).items():
            assert "!h}" not in text, key
            assert not re.search(r"第 ?\{(layer|head|h|kv)\}", text), key


@pytest.mark.parametrize("layer,head", [(0, 0), (2, 3), (3, 5)])
def test_a_head_is_named_by_its_indices_in_both_languages(layer: int, head: int) -> None:
    for lang in i18n.LANGUAGES:
        assert numbers(views.head_label(layer, head, lang=lang)) == [layer, head], lang
        assert numbers(lesson.head_name(layer, head, lang)) == [layer, head], lang


@pytest.mark.parametrize("layer,head", [(0, 0), (2, 3), (3, 5)])
def test_the_heatmap_title_names_the_selected_layer_and_head(att: Attention, layer: int, head: int) -> None:
    for lang in i18n.LANGUAGES:
        assert numbers(views.heatmap(att, layer, head, lang=lang).layout.title.text) == [layer, head], lang
        mean = views.heatmap(att, layer, None, lang=lang).layout.title.text
        assert numbers(mean) == [layer, HEADS], lang  # "layer 2, mean of 6 heads": the layer, then a count


def test_the_all_heads_grid_labels_outline_and_hover_agree(att: Attention) -> None:
    for lang in i18n.LANGUAGES:
        layer, head = CHOSEN
        fig = views.model_view(att, focus=(layer, head), lang=lang)
        assert list(fig.layout.xaxis.ticktext) == [str(h) for h in range(HEADS)]
        assert list(fig.layout.yaxis.ticktext) == [str(lay) for lay in range(LAYERS)]
        assert list(fig.layout.xaxis.tickvals) == list(range(HEADS))
        outline = fig.layout.shapes[0]
        assert ((outline.x0 + outline.x1) / 2, (outline.y0 + outline.y1) / 2) == (head, layer)
        picks = fig.data[1]
        cell = list(picks.customdata).index([layer, head])
        assert (picks.x[cell], picks.y[cell]) == (head, layer)
        assert numbers(first_line(picks.hovertext[cell])) == [layer, head]
        # the canvas the explorer draws the same grid with
        palette = {s: {"heading": "#000", "label": "#000", "background": "#fff"} for s in ("light", "dark")}
        header, _ = grid_canvas.read(grid_canvas.grid_payload(att, focus=(layer, head), palette=palette, lang=lang))
        assert header["focus"] == [layer, head]
        assert numbers(header["hover"][layer * HEADS + head][0]) == [layer, head]


def test_the_head_view_names_its_layer_and_heads(att: Attention) -> None:
    for lang in i18n.LANGUAGES:
        fig = views.head_view(att, 2, lang=lang)
        lines = [tr for tr in fig.data if (tr.legendgroup or "").startswith("h")]  # a head's lines: group "h<index>"
        assert {int(tr.legendgroup[1:]) for tr in lines} == set(range(HEADS))
        assert all(numbers(tr.name) == [int(tr.legendgroup[1:])] for tr in lines)
        assert numbers(first_line(views.head_view(att, 2, heads=[3], lang=lang).layout.title.text)) == [2, 3]
        assert numbers(first_line(views.head_view(att, 2, heads=[0, 3], lang=lang).layout.title.text)) == [2, 0, 3]
        focus = views.head_view(att, 2, heads=[3], highlight=5, lang=lang).layout.title.text
        assert numbers(first_line(focus)) == [2, 3, 5]  # layer, head, then the token's position


def test_the_graph_view_title_names_its_layer_and_head(att: Attention) -> None:
    for lang in i18n.LANGUAGES:
        title = views.graph_view(att, 2, 3, threshold=0.2, lang=lang).layout.title.text
        assert numbers(first_line(title)) == [2, 3]


def test_the_token_focus_bars_name_the_heads_they_carry(att: Attention) -> None:
    by_lang = {lang: views.token_focus(att, 5, 2, top=8, lang=lang).data[0] for lang in i18n.LANGUAGES}
    for bar in by_lang.values():
        assert [numbers(label) for label in bar.y] == [list(cell) for cell in bar.customdata]
        assert list(bar.customdata[0]) == list(CHOSEN)  # the planted head leads
    assert [numbers(y) for y in by_lang["en"].y] == [numbers(y) for y in by_lang["zh"].y]


def _section(html: str, step_number: int) -> str:
    return html.split("<section>")[step_number].split("</section>")[0]


def test_the_handout_table_and_text_name_the_same_head(att: Attention) -> None:
    for lang in i18n.LANGUAGES:
        pick = lesson.find_head(att, 5, 2)
        assert (pick.layer, pick.head) == CHOSEN
        html = handout_html(lesson.Facts.of(att, pick), lang=lang, text=att.text, model=att.model, answers={})
        all_heads = _section(html, lesson.STEPS.index("all_heads") + 1)
        look = re.search(r'<p class="look">(.*?)</p>', all_heads, re.S).group(1)  # type: ignore[union-attr]
        assert numbers(re.sub(r"\d+\.\d+", " ", look)) == list(CHOSEN)  # "the outlined one is layer 2, head 3"
        table = re.search(r'<table class="tops">(.*?)</table>', all_heads, re.S).group(1)  # type: ignore[union-attr]
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
        assert [int(h) for h in re.findall(r"<th>(\d+)</th>", rows[0])] == list(range(HEADS))  # columns: heads
        assert [int(re.match(r"<th>(\d+)</th>", r).group(1)) for r in rows[1:]] == list(range(LAYERS))  # type: ignore[union-attr]
        # the head the text names is the cell at that row and column: the one whose top token is "cat"
        cells = re.findall(r"<td[^>]*>(.*?)</td>", rows[1 + CHOSEN[0]])
        assert cells[CHOSEN[1]] == "cat"
        named = lesson.head_name(*CHOSEN, lang)
        for step in lesson.STEPS:  # every step whose text (when shown) names the head names this one
            section = _section(html, lesson.STEPS.index(step) + 1)
            if "{head}" in i18n.t(f"lesson.{step}.look", lang) and '<p class="look">' in section:
                assert named in section, step
