"""One numbering in a real browser (Debian's chromium against `streamlit run app.py`, as in
tests/test_browser.py): in English and in Chinese, the explorer's layer and head selects, the
link, the heatmap's title and the all-heads grid's outline and hover name the same indices, and
the lesson's text names the head its heatmap title and its grid's outline show."""

from __future__ import annotations

import re
from typing import Any

import pytest

from attnviz import i18n

from .test_browser import FIRST_LOAD_MS, GRID_CELL_JS, WAIT_MS, Session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HEADS = 12  # MiniLM, the default model: 6 layers x 12 heads

# The hover lines the grid canvas carries for one cell (what a pointer over it shows).
GRID_HOVER_JS = """([layer, head]) => { const m = document.querySelector('.st-key-view_grid [data-attnviz-grid][data-drawn]');
  const hd = m.__attnvizMap.head; return hd.hover[layer * hd.heads + head]; }"""

# What Plotly drew for the chart in container `key`: its title, tick labels, outline and picks.
PLOTLY_JS = """(key) => {
  const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  if (!gd || !gd._fullLayout || !gd.querySelector('.main-svg')) return null;
  const title = gd.querySelector('.gtitle');
  return {
    title: gd.layout.title && gd.layout.title.text || '',
    drawn_title: title ? title.textContent : '',
    xticks: [...gd.querySelectorAll('.xtick text')].map(t => t.textContent),
    yticks: [...gd.querySelectorAll('.ytick text')].map(t => t.textContent),
    shapes: (gd.layout.shapes || []).map(s => [s.x0, s.x1, s.y0, s.y1]),
    picks: (gd.data.find(t => t.customdata && t.hovertext) || {}),
  };
}"""


def numbers(text: str) -> list[int]:
    return [int(d) for d in re.findall(r"\d+", re.sub(r"<[^>]*>", " ", text))]


def head_names(text: str, lang: str) -> list[tuple[int, int]]:
    """Every (layer, head) that `text` names the way the catalogue's `fig.layer_head` writes one,
    read back as the numbers the page shows."""
    template = re.escape(i18n.catalogue(lang)["fig.layer_head"])
    pattern = re.sub(r"\\\{(layer|head)(![a-z])?\\\}", r"(?P<\1>\\d+)", template)
    return [(int(m["layer"]), int(m["head"])) for m in re.finditer(pattern, text)]


def _plotly(s: Session, key: str) -> dict[str, Any]:
    s.page.wait_for_function(f"(key) => ({PLOTLY_JS})(key) !== null", arg=key, timeout=WAIT_MS)
    drawn: dict[str, Any] = s.page.evaluate(PLOTLY_JS, key)
    return drawn


def test_the_explorer_names_the_selected_layer_and_head_alike_in_both_languages(session: Session) -> None:
    s = session
    layer, head = 3, 1
    for lang in i18n.LANGUAGES:
        s.open({"lang": lang, "layer": str(layer), "head": str(head)})
        assert s.layer_head_widgets() == (str(layer), str(head)), lang
        assert (s.query().get("layer"), s.query().get("head")) == (str(layer), str(head)), lang  # the share link
        title = s.chart_title("view_heatmap")
        assert numbers(title) == [layer, head], (lang, title)
        assert s.page.evaluate(GRID_CELL_JS, [0, 0])["focus"] == [layer, head], lang  # the outline
        hover = s.page.evaluate(GRID_HOVER_JS, [layer, head])
        assert head_names(hover[0], lang) == [(layer, head)], (lang, hover)
        assert numbers(hover[0]) == [layer, head], (lang, hover)
    assert not s.crashed


def test_the_lesson_names_the_head_its_pictures_show_in_both_languages(session: Session) -> None:
    s = session
    for lang in i18n.LANGUAGES:
        s.page.goto(f"{s.url}/lesson?lang={lang}")
        s.page.wait_for_function(
            "(want) => document.querySelector('h1')?.innerText === want",
            arg=i18n.t("lesson.title", lang),
            timeout=FIRST_LOAD_MS,
        )
        s.page.locator(".st-key-lesson_chart_all_heads .js-plotly-plot .main-svg").first.wait_for(timeout=FIRST_LOAD_MS)
        s.wait_idle(FIRST_LOAD_MS)

        grid = _plotly(s, "lesson_chart_all_heads")
        x0, x1, y0, y1 = grid["shapes"][0]
        outlined = (round((y0 + y1) / 2), round((x0 + x1) / 2))  # (layer, head): layer down, head across
        assert grid["xticks"] == [str(h) for h in range(HEADS)], lang  # the columns read as the heads' indices
        assert grid["yticks"][0] == "0", lang
        picks = grid["picks"]
        cell = [list(c) for c in picks["customdata"]].index(list(outlined))
        assert head_names(picks["hovertext"][cell], lang) == [outlined], lang

        heat = _plotly(s, "lesson_chart_one_head")
        first = heat["title"].split("<br>")[0]
        assert numbers(first) == list(outlined), (lang, first)  # step 2 draws the head step 3 outlines
        assert heat["drawn_title"].startswith(re.sub(r"<[^>]*>", "", first)), lang

        for key in ("lesson_pair", "lesson_step_one_head", "lesson_step_all_heads"):
            said = s.page.locator(f".st-key-{key}").first.inner_text()
            assert set(head_names(said, lang)) == {outlined}, (lang, key, said)  # "the outlined one is ..."
    assert not s.crashed
