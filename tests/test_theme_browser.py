"""Issue 24.1 in chromium: after a new sentence each explorer chart is drawn once, not twice
(Streamlit's chart element still calls Plotly.react twice per new chart; the second call must
not redraw), it shows the new sentence, and its colours are Streamlit's for the visitor's light
or dark theme (the browser's prefers-color-scheme, which Streamlit follows by default).

Draws are counted by bench/breakdown.py's init script: every Plotly.newPlot/react call, and as
a full draw the first call on a new chart and any call during which plotly fires
plotly_beforeplot (its _doPlot)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import attnviz
from attnviz.app import plot_theme

from .test_browser import VIEWS, WAIT_MS, Session, _session, _tokens

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from breakdown import probes_js

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TEXT = "Penguins waddle across the frozen beach while seals sleep."

# Every view has been drawn since `t0` and has settled: both of Streamlit's Plotly calls, or the
# canvas map's draw (its "attnviz:drawn" event, which the probes record as a call named "canvas").
SETTLED_JS = """([t0, keys]) => keys.every(k => {
  const calls = (window.__plots || []).filter(p => p.key === k && p.start >= t0);
  const canvas = calls.some(p => p.name === 'canvas');
  return calls.length >= (canvas ? 1 : 2) && calls.every(p => p.done !== null);
})"""
CALLS_JS = """(t0) => (window.__plots || []).filter(p => p.start >= t0)
  .map(p => ({key: p.key, name: p.name, full: p.full}))"""

# What a chart shows, read from the DOM: the paper's background, the title and a tick label.
COLOURS_JS = """(k) => {
  const app = getComputedStyle(document.querySelector('[data-testid="stApp"]'));
  const m = document.querySelector('.st-key-' + k + ' [data-attnviz-map][data-drawn]');
  if (m) return {paper: app.backgroundColor, page: app.backgroundColor, text: app.color,  // a transparent canvas
                 title: m.dataset.heading, tick: m.dataset.label};
  const gd = document.querySelector('.st-key-' + k + ' .js-plotly-plot');
  const fill = (sel) => { const el = gd.querySelector(sel); return el ? getComputedStyle(el).fill : null; };
  return {paper: gd.querySelector('.main-svg').style.background, page: app.backgroundColor, text: app.color,
          title: fill('.gtitle'), tick: fill('.xtick text') || fill('.ytick text')};
}"""


def _rgb(hex_colour: str) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


@pytest.fixture
def light_session(chromium: Any, server: str) -> Iterator[Session]:
    yield from _session(chromium, server, color_scheme="light")


def _assert_colours(s: Session, mode: plot_theme.Mode) -> None:
    look = plot_theme.template_json(mode)["layout"]
    for view in VIEWS:
        seen = s.page.evaluate(COLOURS_JS, view)
        assert seen["paper"] == seen["page"] == _rgb(look["paper_bgcolor"]), (mode, view, seen)
        assert seen["title"] == seen["text"] == _rgb(look["title"]["font"]["color"]), (mode, view, seen)
        if seen["tick"] is not None:  # the head and graph views hide their axes
            assert seen["tick"] == _rgb(look["font"]["color"]), (mode, view, seen)


def test_each_chart_is_drawn_once_per_run_in_streamlits_colours(
    light_session: Session, dark_session: Session, minilm: attnviz.PretrainedModel
) -> None:
    s = light_session
    s.page.add_init_script(probes_js())
    s.open()
    t0 = s.page.evaluate("performance.now()")
    tokens = _tokens(minilm, TEXT)
    s.submit(TEXT, tokens)
    s.page.wait_for_function(SETTLED_JS, arg=[t0, list(VIEWS)], timeout=WAIT_MS)
    calls = s.page.evaluate(CALLS_JS, t0)
    for view in VIEWS:
        mine = [c for c in calls if c["key"] == view]
        if any(c["name"] == "canvas" for c in mine):  # the heatmap's canvas: drawn once
            assert len(mine) == 1, (view, mine)
            continue
        assert len(mine) >= 2, (view, calls)  # Streamlit's two Plotly.react calls...
        assert sum(c["full"] for c in mine) == 1, (view, mine)  # ...and one drawing
    word = max(tokens, key=len)
    assert word in s.svg_texts("view_heatmap"), (word, tokens)  # the new sentence is what was drawn
    _assert_colours(s, "light")
    s.shot("theme-light", key="view_grid")

    d = dark_session
    d.open()
    _assert_colours(d, "dark")
    d.shot("theme-dark", key="view_grid")
    assert not s.crashed and not d.crashed
