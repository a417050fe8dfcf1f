"""Why a head looks there, in a real browser (Debian's chromium against `streamlit run app.py`,
as tests/test_browser.py drives it), in English and in Chinese on a 1366 px desktop and a 390 px
phone: a click on a cell of the explorer's map (the canvas's own geometry says where the cell
is) opens "why"; the parts it lists on each side, names and shares as shown, are those of
`attnviz.explain.score_sources` computed here for that cell, the part-by-part matrix and the
head's card are drawn, the chosen cell is outlined on the map, and nothing of it leaves its
screen (tests/test_browser_overflow.py's checks). Screenshots go to test-artifacts/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import attnviz
from attnviz import explain, i18n
from attnviz.views import head_label

from .browser import ARTIFACTS
from .test_app_why import assert_parts
from .test_browser import WAIT_MS, Session, _session
from .test_browser_overflow import PROBLEMS_JS, SETTLED_JS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TEXT = "The animal didn't cross the street because it was tired."
LAYER, HEAD = 3, 1  # where "it" looks at "animal" most (weight 0.70)
SCREENS = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}

# The centre of cell (i, j) of the explorer's map in page pixels, from the canvas's own layout
# (app/canvas/token_canvas.js: __attnvizLayout), and the cell it outlines.
CELL_JS = """([i, j]) => {
  const m = document.querySelector('.st-key-view_heatmap [data-attnviz-map][data-drawn]');
  if (!m || !m.__attnvizLayout) return null;
  const L = m.__attnvizLayout, [r0, r1, c0, c1] = L.view, box = m.querySelector('canvas').getBoundingClientRect();
  return {x: box.left + L.x0 + (j - c0 + 0.5) * L.size / (c1 - c0), y: box.top + L.y0 + (i - r0 + 0.5) * L.size / (r1 - r0),
          mark: m.__attnvizMap.head.mark};
}"""

# The body rows of one side's table as the page shows them (the index column left out).
ROWS_JS = """(side) => {
  const t = document.querySelector('.st-key-why_' + side + '_parts table');
  if (!t) return null;
  return [...t.querySelectorAll('tbody tr')].map(tr => [...tr.querySelectorAll('td')].map(td => td.innerText.trim()));
}"""


def _click_cell(s: Session, i: int, j: int) -> None:
    s.page.locator(".st-key-view_heatmap [data-attnviz-map]").scroll_into_view_if_needed()
    spot = s.page.evaluate(CELL_JS, [i, j])
    assert spot is not None, "the map is not drawn"
    s.page.mouse.move(spot["x"], spot["y"])
    s.page.mouse.click(spot["x"], spot["y"])


def _check(s: Session, minilm: attnviz.PretrainedModel, lang: str, screen: str) -> None:
    s.open({"model": "minilm", "text": TEXT, "layer": str(LAYER), "head": str(HEAD)})
    tokens = minilm.encode(TEXT).tokens
    i, j = tokens.index("it"), tokens.index("animal")
    _click_cell(s, i, j)
    s.page.wait_for_function("() => !!document.querySelector('.st-key-why_key_parts table')", timeout=WAIT_MS)
    s.page.locator(".st-key-why_matrix .js-plotly-plot .main-svg").first.wait_for(timeout=WAIT_MS)
    s.page.locator(".st-key-why_card li").first.wait_for(timeout=WAIT_MS)
    s.page.wait_for_function(SETTLED_JS, timeout=WAIT_MS)

    want = explain.score_sources(minilm, TEXT, LAYER, HEAD, i, j)
    for side in ("query", "key"):
        assert_parts(s.page.evaluate(ROWS_JS, side), want, side, lang)
    assert s.page.evaluate(CELL_JS, [i, j])["mark"] == [i, j]  # the map outlines the cell chosen
    heading = s.page.locator(".st-key-why h3").first.inner_text()
    assert heading.strip() == i18n.t("why.title", lang)
    card = s.page.locator(".st-key-why_card").inner_text()
    assert i18n.t("why.card_title", lang, head=head_label(LAYER, HEAD, lang=lang)) in card
    main = s.page.locator('[data-testid="stMain"]').inner_text()
    assert i18n.t("why.intro", lang, limit=explain.SCORE_SOURCES_MAX_TOKENS)[:40] in main  # the bound, said
    problems = [p for p in s.page.evaluate(PROBLEMS_JS) if "[why" in p or "scrolls sideways" in p]
    assert problems == [], problems
    assert not s.dialogs and not s.crashed and s.page.locator('[data-testid="stException"]').count() == 0
    _shot(s, f"browser-why-{lang}-{SCREENS[screen]['width']}")


def _shot(s: Session, name: str) -> None:
    """The "why" section whole: the app scrolls inside its own box and draws only what is on
    screen, so the screen is made as tall as the page for the picture (and put back)."""
    ARTIFACTS.mkdir(exist_ok=True)
    size = s.page.viewport_size
    tall = s.page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    s.page.set_viewport_size({"width": size["width"], "height": min(max(tall, size["height"]), 9000)})
    s.page.wait_for_function(SETTLED_JS, timeout=WAIT_MS)
    s.page.locator(".st-key-why").first.screenshot(path=str(ARTIFACTS / f"{name}.png"))
    s.page.set_viewport_size(size)


@pytest.fixture(params=[(lang, screen) for screen in SCREENS for lang in ("en", "zh")], ids=lambda p: "-".join(p))
def why_session(request: pytest.FixtureRequest, chromium: Any, server: str) -> Iterator[tuple[Session, str, str]]:
    lang, screen = request.param
    for s in _session(chromium, server, viewport=SCREENS[screen], locale="zh-CN" if lang == "zh" else "en-US"):
        yield s, lang, screen


def test_a_clicked_cell_shows_the_parts_of_its_score(
    why_session: tuple[Session, str, str], minilm: attnviz.PretrainedModel
) -> None:
    s, lang, screen = why_session
    _check(s, minilm, lang, screen)
