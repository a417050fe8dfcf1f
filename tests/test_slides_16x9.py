"""Slides in a real browser: every image saved from the buttons under a chart (or the chart's
camera) is a 16:9 slide, 1920 x 1080 px as its PNG header says (960 x 540 for the SVG), on an
opaque background of the theme's colour (light and dark), its content centred, with the model's
display name, the sentence and the switches that change the picture (heads off, sinks hidden)
in the caption, and no note on what a click does (an image cannot be clicked). Pure parts: the
camera's size and the titles without their click notes. Older checks: tests/test_browser_share.py."""

from __future__ import annotations

import io
import re
import struct
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import plotly.graph_objects as go
import pytest
from PIL import Image

from attnviz import i18n, views
from attnviz.app import charts, plot_theme
from attnviz.result import Attention

from .browser import ARTIFACTS
from .test_browser import WAIT_MS, Session

TEXT = "The animal didn't cross the street because it was too tired."


def _paper(mode: plot_theme.Mode) -> tuple[int, int, int]:
    """The theme's paper colour (the page's background) as (r, g, b)."""
    colour = plot_theme.template_json(mode)["layout"]["paper_bgcolor"].lstrip("#")
    r, g, b = (int(colour[i : i + 2], 16) for i in (0, 2, 4))
    return r, g, b


LIGHT, DARK = _paper("light"), _paper("dark")  # #FFFFFF and #171614


def test_the_camera_saves_1920_by_1080_whatever_the_figures_height() -> None:
    # image_config takes no figure, so no figure's height can reach the slide's size
    opts = charts.image_config("x")["toImageButtonOptions"]
    assert (opts["width"] * opts["scale"], opts["height"] * opts["scale"]) == (1920, 1080)


def test_a_slides_title_says_nothing_of_clicks(tired: Attention) -> None:
    grid = views.model_view(tired)
    assert i18n.t("fig.note_click_head", "en") in grid.layout.title.text  # the page's figure says it...
    shown = charts.image_title(grid)
    assert shown is not None and "click" not in shown.lower() and shown.startswith(grid.layout.title.text[:10])
    importance = views.importance_grid(np.zeros((tired.n_layers, tired.n_heads)), "effect")
    kept = charts.image_title(importance)  # the legend of the crosses stays, the click goes
    assert kept is not None and "click" not in kept and i18n.t("abl.fig.note_off_image", "en") in kept
    assert charts.image_title(go.Figure(layout={"title": {"text": "plain"}})) is None  # nothing to take out


def _png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), data[:16]
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def _save(s: Session, view: str, fmt: str) -> bytes:
    """The file the view's PNG or SVG button saves."""
    button = s.page.locator(f".st-key-{view} [data-attnviz-image='{fmt}']").first
    button.wait_for(timeout=WAIT_MS)
    with s.page.expect_download(timeout=WAIT_MS) as download:
        button.click()
    assert download.value.suggested_filename.endswith(f".{fmt}")
    data = Path(download.value.path()).read_bytes()
    dark = s.page.evaluate("() => matchMedia('(prefers-color-scheme: dark)').matches")
    theme = "dark" if dark else "light"
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"slide-{theme}-{view}.{fmt}").write_bytes(data)  # to look at
    return data


def _centred(pixels: np.ndarray, background: tuple[int, int, int], caption_px: int) -> tuple[int, int]:
    """The free columns left and right of what the slide drew above its caption."""
    body = pixels[: pixels.shape[0] - caption_px, :, :3].astype(int)
    ink = np.abs(body - np.array(background)).sum(axis=2) > 24
    cols = np.flatnonzero(ink.any(axis=0))
    assert cols.size, "nothing drawn"
    return int(cols[0]), int(pixels.shape[1] - 1 - cols[-1])


def _check_png(data: bytes, background: tuple[int, int, int]) -> None:
    assert _png_size(data) == (1920, 1080)
    pixels = np.asarray(Image.open(io.BytesIO(data)).convert("RGBA"))
    assert (pixels[..., 3] == 255).all()  # opaque everywhere
    for y, x in ((2, 2), (2, 1917), (1077, 2), (1077, 1917)):
        assert tuple(int(v) for v in pixels[y, x, :3]) == background
    left, right = _centred(pixels, background, caption_px=2 * (16 + 18 * 2 + 8))
    assert abs(left - right) <= 4, (left, right)


def _svg_texts(data: bytes) -> tuple[ElementTree.Element, str]:
    root = ElementTree.fromstring(data)
    return root, " ".join(t.strip() for t in root.itertext() if t.strip())


@pytest.mark.browser
@pytest.mark.slow
def test_slides_are_16_by_9_on_the_light_background_with_the_switches_named(session: Session) -> None:
    s = session
    s.open({"text": TEXT, "off": "1.3", "sinks": "1"})
    _check_png(_save(s, "view_heatmap", "png"), LIGHT)
    _check_png(_save(s, "view_grid", "png"), LIGHT)
    root, texts = _svg_texts(_save(s, "view_grid", "svg"))
    assert (root.get("width"), root.get("height")) == ("960", "540")
    caption = [t.text or "" for t in root if t.tag.endswith("text")]
    assert caption[0] == f"{i18n.t('model.minilm', 'en')} · “{TEXT}”"  # the display name, not "minilm"
    heads = i18n.t("slides.heads_off", "en", heads=i18n.t("fig.layer_head", "en", layer=1, head=3))
    assert caption[1] == f"{heads} · {i18n.t('slides.sinks_hidden', 'en')}"
    assert "click" not in texts.lower() and i18n.t("fig.note_click_head", "en") not in texts
    s.open_views()  # a Plotly chart: the head view
    _check_png(_save(s, "view_head", "png"), LIGHT)
    assert not s.dialogs and not s.crashed


@pytest.mark.browser
@pytest.mark.slow
def test_slides_take_the_dark_themes_background(dark_session: Session) -> None:
    s = dark_session
    s.open({"text": TEXT})
    _check_png(_save(s, "view_heatmap", "png"), DARK)
    s.open_views()
    _check_png(_save(s, "view_head", "png"), DARK)
    root, texts = _svg_texts(_save(s, "view_head", "svg"))
    assert (root.get("width"), root.get("height")) == ("960", "540")
    fills = [r.get("fill") for r in root if r.tag.endswith("rect")]
    assert fills and re.sub(r"\s", "", fills[0] or "") == "rgb({},{},{})".format(*DARK)
    assert i18n.t("model.minilm", "en") in texts and "minilm ·" not in texts
    assert not s.dialogs and not s.crashed


HOSTILE = "<script>window.pwned=1</script> <b>bold</b> &amp; " + " ".join(["the tired animal crossed"] * 12)


@pytest.mark.browser
@pytest.mark.slow
def test_a_caption_is_the_text_typed_drawn_once_and_cut_to_the_slide(session: Session) -> None:
    """A sentence with markup and past 300 characters: the caption reads the characters typed
    (escaped once, for the SVG it lands in: no "&lt;"), ends in "…" within the slide's width, and
    nothing of it runs."""
    s = session
    assert len(HOSTILE) > 300
    s.open({"text": HOSTILE})
    png = _save(s, "view_heatmap", "png")
    root, _ = _svg_texts(_save(s, "view_heatmap", "svg"))
    first = next(t.text or "" for t in root if t.tag.endswith("text"))
    assert first.startswith(f"{i18n.t('model.minilm', 'en')} · “<script>window.pwned=1</script> <b>bold</b> &amp; the")
    assert "&lt;" not in first and first.endswith("…”")
    assert len(first) < len(HOSTILE)
    # the map inside draws no caption of its own (no empty text with an unset font)
    assert all((t.text or "").strip() for t in root.iter() if t.tag.endswith("text")), "an empty text element"
    # the caption's ink ends inside the slide: the last 8 px of its rows are background
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    caption_rows = pixels[-2 * (16 + 18 * 2 + 8) :, -16:, :]
    assert (np.abs(caption_rows - np.array(LIGHT)).sum(axis=2) <= 24).all()
    assert s.page.evaluate("() => window.pwned === undefined")
    assert not s.dialogs and not s.crashed
