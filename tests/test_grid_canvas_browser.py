"""The explorer's all-heads grid on its canvas (attnviz/app/canvas/grid_canvas.js), in chromium against
`streamlit run app.py`: every thumbnail pixel has the colour of its weight on `model_view`'s
scale, the gaps stay empty and the head in focus is outlined; pointing at a head names it and
the key token it looks at most; a click focuses that head (one run), and in the heads-off click
mode crosses it out and back; the PNG and SVG buttons save it; its words are readable on the
dark theme."""

from __future__ import annotations

from itertools import pairwise
from typing import Any
from xml.etree import ElementTree

import numpy as np
import pytest

import attnviz
from attnviz import i18n, views
from attnviz.views._base import FOCUS_COLOR, SEQUENTIAL
from attnviz.views.ablation import OFF_COLOR
from attnviz.views.grid_canvas import hover_lines

from .test_browser import GRID_CELL_JS, WAIT_MS, Session, _luminance
from .test_token_canvas_browser import save_png_and_svg

pytestmark = [pytest.mark.browser, pytest.mark.slow]

GRID = ".st-key-view_grid [data-attnviz-grid][data-drawn]"
SHORT = "Owls sleep."  # five tokens: thumbnails of 5 x 5 pixels, each a few screen px wide

# The canvas's RGBA at css px (x, y) of the canvas, and its layout (app/canvas/grid_canvas.js).
PIXEL_JS = """([x, y]) => { const c = document.querySelector('GRID canvas'), dpr = c.width / c.clientWidth;
  return Array.from(c.getContext('2d').getImageData(Math.floor(x * dpr), Math.floor(y * dpr), 1, 1).data); }""".replace(
    "GRID", GRID
)
LAYOUT_JS = """() => { const m = document.querySelector('GRID'), h = m.__attnvizMap.head;
  return {...m.__attnvizLayout, thumb: h.thumb, gap: h.gap, off: h.off, focus: h.focus}; }""".replace("GRID", GRID)
TIP_JS = """() => { const t = document.querySelector('.st-key-view_grid .attnviz-map-tip');
  return t && getComputedStyle(t).display !== 'none' ? {text: t.textContent, children: t.children.length} : null; }"""
# How many runs the page began since `watch_runs` was called.
WATCH_RUNS_JS = """() => { window.__runs = 0; const app = document.querySelector('[data-testid="stApp"]');
  new MutationObserver(() => { if (app.dataset.testScriptState === 'running') window.__runs += 1; })
    .observe(app, {attributes: true, attributeFilter: ['data-test-script-state']}); }"""


def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=np.float64)


def _scale_colour(p: float) -> np.ndarray:
    """The colour of position p in [0, 1] on SEQUENTIAL, interpolated in RGB as plotly.js does."""
    stops = [(float(q), _rgb(c)) for q, c in SEQUENTIAL]  # "#rrggbb" stops (plotly's Viridis)
    for (q0, c0), (q1, c1) in pairwise(stops):
        if p <= q1:
            return c0 + (p - q0) / (q1 - q0) * (c1 - c0)
    return stops[-1][1]


def _pixel(s: Session, x: float, y: float) -> np.ndarray:
    return np.array(s.page.evaluate(PIXEL_JS, [x, y]), dtype=np.float64)


def _grid(s: Session) -> dict[str, Any]:
    s.page.locator(GRID).scroll_into_view_if_needed()
    return dict(s.page.evaluate(LAYOUT_JS))


def test_each_thumbnail_pixel_has_the_colour_of_its_weight(session: Session, minilm: attnviz.PretrainedModel) -> None:
    s = session
    s.open({"text": SHORT, "layer": "2", "head": "7"})
    att = minilm.attend(SHORT)
    zmax = float(views.model_view(att).data[0].zmax)  # the figure's colour range: 0 to the 0.99 quantile
    L = _grid(s)
    assert (L["thumb"], L["layers"], L["heads"], L["focus"]) == (att.n, 6, 12, [2, 7])
    px = L["unit"] / (L["thumb"] + L["gap"])  # one mosaic pixel in css px
    assert px >= 3, L
    rng = np.random.default_rng(0)
    for layer, head in ((0, 0), (2, 7), (5, 11), (3, 4)):
        for r, c in rng.integers(0, att.n, size=(3, 2)):
            x = L["x0"] + (L["gap"] / 2 + head * (L["thumb"] + L["gap"]) + c + 0.5) * px
            y = L["y0"] + (L["gap"] / 2 + layer * (L["thumb"] + L["gap"]) + r + 0.5) * px
            want = _scale_colour(min(1.0, float(att.weights[layer, head, r, c]) / zmax))
            seen = _pixel(s, x, y)
            assert seen[3] == 255 and np.abs(seen[:3] - want).max() <= 4, (layer, head, r, c, seen, want)
    unit, x0, y0 = L["unit"], L["x0"], L["y0"]
    assert _pixel(s, x0 + 1 * unit, y0 + 0.5 * unit)[3] == 0  # the gap between two thumbnails: empty
    edge = _pixel(s, x0 + 7 * unit, y0 + 2.5 * unit)  # the focus outline on the left edge of (2, 7)
    assert np.abs(edge[:3] - _rgb(FOCUS_COLOR)).max() <= 4, edge
    assert not s.crashed


def test_pointing_names_the_head_and_a_click_focuses_it_in_one_run(
    session: Session, minilm: attnviz.PretrainedModel
) -> None:
    s = session
    s.open({"text": SHORT})
    att = minilm.attend(SHORT)
    _grid(s)
    layer, head = 4, 9
    spot = s.page.evaluate(GRID_CELL_JS, [layer, head])
    s.page.mouse.move(spot["px"], spot["py"])
    s.page.wait_for_function(
        f"(want) => document.querySelector('{GRID}').dataset.hover === want", arg=f"{layer},{head}", timeout=WAIT_MS
    )
    tip = s.page.evaluate(TIP_JS)
    assert tip == {"text": "\n".join(hover_lines(att, "en")[layer * 12 + head]), "children": 0}, tip
    assert tip["text"].startswith(i18n.t("fig.layer_head", "en", layer=layer, head=head))

    s.page.evaluate(WATCH_RUNS_JS)
    s.page.mouse.click(spot["px"], spot["py"])
    which = i18n.t("fig.head_n", "en", h=head)
    title = i18n.t("fig.layer_which", "en", layer=layer, which=which)
    s.page.wait_for_function(
        "(want) => { const m = document.querySelector('.st-key-view_heatmap [data-attnviz-map][data-drawn]');"
        " return !!m && m.__attnvizText[0].startsWith(want); }",
        arg=title,
        timeout=WAIT_MS,
    )
    s.wait_views()
    assert s.layer_head_widgets() == (str(layer), str(head))
    assert _grid(s)["focus"] == [layer, head]
    assert s.page.evaluate("() => window.__runs") == 1  # the click's trigger holds for one run only
    assert not s.dialogs and not s.crashed


def test_in_the_heads_off_mode_a_click_crosses_the_head_out_and_back(session: Session) -> None:
    s = session
    s.open({"text": SHORT, "layer": "0", "head": "0"})
    s.page.locator(".st-key-_abl_click label").click()  # clicks in the grid now switch heads
    s.wait_idle()
    clicked = (1, 3)
    for want in ([list(clicked)], []):
        _grid(s)
        spot = s.page.evaluate(GRID_CELL_JS, list(clicked))
        s.page.mouse.click(spot["px"], spot["py"])
        s.page.wait_for_function(
            f"(want) => {{ const m = document.querySelector('{GRID}');"
            " return !!m && JSON.stringify(m.__attnvizMap.head.off) === JSON.stringify(want); }",
            arg=want,
            timeout=WAIT_MS,
        )
        s.wait_views()
        L = _grid(s)
        centre = _pixel(s, L["x0"] + (clicked[1] + 0.5) * L["unit"], L["y0"] + (clicked[0] + 0.5) * L["unit"])
        crossed = np.abs(centre[:3] - _rgb(OFF_COLOR)).max() <= 4
        assert crossed == bool(want), (want, centre)  # the cross's centre, in its colour
    assert s.layer_head_widgets() == ("0", "0")  # the clicks never moved the focus
    assert not s.crashed


def test_the_png_and_svg_buttons_save_the_grid(session: Session) -> None:
    s = session
    s.open({"text": SHORT, "layer": "2", "head": "3"})
    _, name, (width, height), text = save_png_and_svg(s, "view_grid")
    assert name == "attnviz-grid.png"
    assert (width, height) == (1920, 1080)  # a 16:9 slide (tests/test_slides_16x9.py)
    assert text.startswith("<svg") and i18n.t("model.minilm", "en") in text and "data:image/png;base64," in text
    tree = ElementTree.fromstring(text)
    written = {el.text for el in tree.iter("{http://www.w3.org/2000/svg}text")}
    assert {i18n.t("fig.head", "en"), i18n.t("fig.layer", "en"), i18n.t("fig.mean_weight", "en"), "11"} <= written
    outlines = [el for el in tree.iter("{http://www.w3.org/2000/svg}rect") if el.get("stroke") == FOCUS_COLOR]
    assert len(outlines) == 1  # the head in focus
    assert not s.dialogs and not s.crashed


def test_the_grid_words_are_readable_on_the_dark_theme(dark_session: Session) -> None:
    s = dark_session
    s.open({"text": SHORT})
    m = s.page.locator(GRID)
    for colour in (m.get_attribute("data-heading"), m.get_attribute("data-label")):
        assert colour is not None and _luminance(colour) > 0.6, colour  # light words on the dark page
    s.shot("grid-dark", key="view_grid")
    assert not s.crashed
