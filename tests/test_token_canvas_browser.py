"""The explorer's heatmap on its canvas (attnviz/app/canvas/token_canvas.js), in chromium against
`streamlit run app.py`: pointing at a cell shows that cell's exact weight and tokens, a
visitor's markup stays text, a dragged box zooms in and a double-click shows the whole map, and
the PNG button saves the map with its caption."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

import attnviz
from attnviz import i18n
from attnviz.views._base import escape as views_escape

from .test_browser import CLEAN, INJECTED_JS, WAIT_MS, Session, _luminance, _tokens
from .test_browser_share import _png_size

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MAP = ".st-key-view_heatmap [data-attnviz-map][data-drawn]"
HOSTILE = "The <img src=x onerror=alert(1)> cat sat."

# Where cell (i, j) of the visible map lies on the page, from the canvas's own layout.
CELL_JS = """([i, j]) => {
  const m = document.querySelector('MAP'), L = m.__attnvizLayout, box = m.querySelector('canvas').getBoundingClientRect();
  const [r0, r1, c0, c1] = L.view;
  return {x: box.left + L.x0 + (j - c0 + 0.5) * L.size / (c1 - c0), y: box.top + L.y0 + (i - r0 + 0.5) * L.size / (r1 - r0)};
}""".replace("MAP", MAP)

TIP_JS = """() => { const t = document.querySelector('.st-key-view_heatmap .attnviz-map-tip');
  return t && getComputedStyle(t).display !== 'none' ? t.textContent : null; }"""


def _point(s: Session, i: int, j: int) -> tuple[float, float]:
    spot = s.page.evaluate(CELL_JS, [i, j])
    return float(spot["x"]), float(spot["y"])


def _hover(s: Session, i: int, j: int) -> str:
    s.page.mouse.move(*_point(s, i, j))
    s.page.wait_for_function(
        f"([i, j]) => document.querySelector('{MAP}').dataset.hover === i + ',' + j", arg=[i, j], timeout=WAIT_MS
    )
    return str(s.page.evaluate(TIP_JS))


def test_pointing_at_a_cell_shows_its_exact_weight_and_markup_stays_text(
    session: Session, minilm: attnviz.PretrainedModel
) -> None:
    s = session
    s.open({"text": HOSTILE})
    tokens = _tokens(minilm, HOSTILE)
    att = minilm.attend(HOSTILE)
    s.page.locator(MAP).scroll_into_view_if_needed()
    for i, j in ((0, 0), (3, 5), (len(tokens) - 1, 2)):
        want = i18n.t(
            "fig.hover_heatmap", "en", q=f"{tokens[i]} ({i})", k=f"{tokens[j]} ({j})", w=f"{att.head(0, 0)[i, j]:.6f}"
        )
        assert _hover(s, i, j) == want.replace("<br>", "\n")  # the float32 the server sent, to 6 places
    drawn = s.svg_texts("view_heatmap")
    assert "<" in tokens and "<" in drawn  # the visitor's "<" is written as a character, not parsed
    assert s.page.evaluate(INJECTED_JS) == CLEAN and not s.dialogs
    assert not s.crashed


def test_a_dragged_box_zooms_in_and_a_double_click_shows_the_whole_map(
    session: Session, minilm: attnviz.PretrainedModel
) -> None:
    s = session
    s.open()
    m = s.page.locator(MAP)
    m.scroll_into_view_if_needed()
    n = int(m.evaluate("m => m.__attnvizMap.rows"))
    assert m.get_attribute("data-view") == f"0,{n},0,{n}"
    s.page.mouse.move(*_point(s, 2, 3))
    s.page.mouse.down()
    s.page.mouse.move(*_point(s, 6, 8), steps=4)
    s.page.mouse.up()
    s.page.wait_for_function(f"() => document.querySelector('{MAP}').dataset.view === '2,7,3,9'", timeout=WAIT_MS)
    tokens = _tokens(minilm, i18n.examples("en")["default"])
    zoomed = s.svg_texts("view_heatmap")
    assert set(tokens[2:9]) & set(zoomed)  # the labels are those of the rows and columns in view
    assert tokens[0] not in zoomed
    s.page.mouse.dblclick(*_point(s, 4, 5))
    s.page.wait_for_function(f"() => document.querySelector('{MAP}').dataset.view === '0,{n},0,{n}'", timeout=WAIT_MS)
    s.shot("canvas-map", key="view_heatmap")
    assert not s.crashed


def save_png_and_svg(s: Session, key: str) -> tuple[Any, str, tuple[int, int], str]:
    """Click a canvas view's PNG and SVG buttons (in the container `key`): the buttons, the PNG's
    file name and pixel size, and the SVG's text."""
    images = s.page.locator(f".st-key-{key} [data-attnviz-image]")
    images.first.wait_for()
    with s.page.expect_download(timeout=WAIT_MS) as png:
        images.nth(0).click()
    size = _png_size(Path(png.value.path()).read_bytes())
    with s.page.expect_download(timeout=WAIT_MS) as svg:
        images.nth(1).click()
    return images, png.value.suggested_filename, size, Path(svg.value.path()).read_text(encoding="utf-8")


def test_the_png_and_svg_buttons_save_the_map_at_slide_size(session: Session) -> None:
    s = session
    s.open()
    _, name, (width, height), text = save_png_and_svg(s, "view_heatmap")
    assert name == "attnviz-heatmap.png"
    assert (width, height) == (1920, 1080)  # a 16:9 slide (tests/test_slides_16x9.py)
    assert text.startswith("<svg") and i18n.t("model.minilm", "en") in text and "data:image/png;base64," in text
    svg = ElementTree.fromstring(text)  # well-formed, and its words are text, not pixels
    written = {el.text for el in svg.iter("{http://www.w3.org/2000/svg}text")}
    assert {"animal", "tired", i18n.t("axis.key", "en"), i18n.t("fig.weight", "en")} <= written, written
    assert not s.dialogs and not s.crashed


def test_the_html_download_is_made_on_click_from_the_map_the_canvas_drew(session: Session) -> None:
    """The explorer's HTML download (its Plotly figure, made only when asked for) shows the
    specification the canvas drew: the same title over the same tokens and the same range."""
    s = session
    s.open()
    drawn = s.page.evaluate(f"() => document.querySelector('{MAP}').__attnvizMap.head")
    with s.page.expect_download(timeout=WAIT_MS) as download:
        s.page.locator(".st-key-dl_heatmap_html button").click()
    assert download.value.suggested_filename == "attnviz-heatmap.html"
    page = Path(download.value.path()).read_text(encoding="utf-8")
    assert json.dumps(drawn["title"]) in page and drawn["zmax"] == 1.0 and '"zmax":1.0' in page
    for i, token in enumerate(drawn["rows"]):
        assert json.dumps(f"{views_escape(token)} ({i})") in page, token
    assert not s.dialogs and not s.crashed


# The colours of the text the canvas wrote right of its colour bar (tick values and "weight"): the
# lightest and the darkest opaque pixel there, as "rgb(r, g, b)".
BAR_TEXT_JS = """() => {
  const m = document.querySelector('MAP'), L = m.__attnvizLayout, canvas = m.querySelector('canvas');
  const dpr = canvas.width / canvas.clientWidth, x = Math.round(L.barText * dpr);
  const px = canvas.getContext('2d').getImageData(x, 0, canvas.width - x, canvas.height).data;
  let light = null, dark = null, best = -1, worst = 2;
  for (let i = 0; i < px.length; i += 4) {
    if (px[i + 3] < 250) continue;
    const lum = (0.2126 * px[i] + 0.7152 * px[i + 1] + 0.0722 * px[i + 2]) / 255;
    const rgb = `rgb(${px[i]}, ${px[i + 1]}, ${px[i + 2]})`;
    if (lum > best) { best = lum; light = rgb; }
    if (lum < worst) { worst = lum; dark = rgb; }
  }
  return {light, dark};
}""".replace("MAP", MAP)


def test_the_words_beside_the_colour_bar_are_readable_in_light_and_dark(
    session: Session, dark_session: Session
) -> None:
    for s, mode in ((session, "light"), (dark_session, "dark")):
        s.open()
        seen = s.page.evaluate(BAR_TEXT_JS)
        assert seen["light"] is not None, mode  # the values and the bar's title were written
        if mode == "dark":
            assert _luminance(seen["light"]) > 0.6, (mode, seen)  # light text on the dark page
        else:
            assert _luminance(seen["dark"]) < 0.6, (mode, seen)  # grey text on the white page
        assert not s.crashed
