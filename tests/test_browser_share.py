"""Links and slides in a real browser (issue 23, items 5 and 6): a link copied from the sidebar's
box after switching a head off, opened in a fresh browser, restores the heads switched off and
the hidden sinks; the chart's camera makes a PNG at least 1600 px wide and the row under the
chart saves a 1920 px PNG and an SVG that name the model and the sentence, all in the browser;
an exported all-heads grid opened offline zooms on the head that is clicked, as its note says.
Pure parts: tests/test_share_links.py, test_share_app.py, test_slides_export.py."""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

import pytest

import attnviz
from attnviz import i18n, views
from attnviz.export import figure_html

from .test_browser import FIRST_LOAD_MS, WAIT_MS, Session, _session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TEXT = "The animal didn't cross the street because it was too tired."

# What the chart's camera button saves: plotly's toImage with the chart's toImageButtonOptions.
CAMERA_JS = """async (gd) => {
  const opts = gd._context.toImageButtonOptions;
  const url = await window.Plotly.toImage(gd, {format: opts.format, width: opts.width, height: opts.height,
                                               scale: opts.scale});
  return {opts: opts, png: url.slice(url.indexOf(',') + 1)};
}"""


def _png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), data[:16]
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def _heads_off_listed(page: Any, heads: list[tuple[int, int]]) -> None:
    """Wait until the switch section lists exactly these heads as off."""
    want = "; ".join(i18n.t("fig.layer_head", "en", layer=a, head=b) for a, b in heads)
    page.wait_for_function(
        "(want) => { const e = document.querySelector('.st-key-abl_off_list');"
        " return !!e && e.innerText.includes(want); }",
        arg=want,
        timeout=WAIT_MS,
    )


def _sinks_hidden(page: Any) -> bool:
    return bool(page.locator(".st-key-sinks_toggle input[type='checkbox']").is_checked())


def test_a_copied_link_restores_heads_off_and_hidden_sinks(session: Session, chromium: Any, server: str) -> None:
    s = session
    s.open({"text": TEXT, "off": "1.3", "sinks": "1"})
    _heads_off_listed(s.page, [(1, 3)])
    assert _sinks_hidden(s.page)

    s.page.locator(".st-key-abl_toggle button").click()  # switch the focused head (0, 0) off too
    _heads_off_listed(s.page, [(0, 0), (1, 3)])
    box = s.page.locator(".st-key-share_link code")
    s.page.wait_for_function(
        "() => { const c = document.querySelector('.st-key-share_link code');"
        " return !!c && c.innerText.includes('off=0.0_1.3'); }",
        timeout=WAIT_MS,
    )
    link = str(box.inner_text()).strip()
    assert link.startswith(server) and "sinks=1" in link
    assert s.query().get("off") == "0.0_1.3"  # the address bar says the same

    opened = _session(chromium, server)  # another browser: a new session opens the copied link
    fresh = next(opened)
    try:
        fresh.page.goto(link)
        fresh.wait_views(timeout=FIRST_LOAD_MS)
        _heads_off_listed(fresh.page, [(0, 0), (1, 3)])
        assert _sinks_hidden(fresh.page)
        assert fresh.tokens_text().startswith("[CLS]")
        assert not fresh.dialogs and not fresh.crashed
    finally:
        opened.close()


def test_every_chart_saves_slides_in_the_browser(session: Session) -> None:
    s = session
    s.open({"text": TEXT})
    s.open_views()  # Plotly's camera: the head view's (the heatmap and the all-heads grid are canvases)
    gd = s.page.locator(".st-key-view_head .js-plotly-plot")
    camera = gd.evaluate(CAMERA_JS)
    width, _ = _png_size(base64.b64decode(camera["png"]))
    assert width >= 1600 and camera["opts"]["format"] == "png"

    images = s.page.locator(".st-key-view_heatmap [data-attnviz-image]")
    images.first.wait_for()
    assert images.count() == 2
    with s.page.expect_download(timeout=WAIT_MS) as png_download:
        images.nth(0).click()
    assert png_download.value.suggested_filename == "attnviz-heatmap.png"
    width, height = _png_size(Path(png_download.value.path()).read_bytes())
    assert width >= 1600 and height > 0
    with s.page.expect_download(timeout=WAIT_MS) as svg_download:
        images.nth(1).click()
    assert svg_download.value.suggested_filename == "attnviz-heatmap.svg"
    svg = Path(svg_download.value.path()).read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<svg") and "because it was too tired" in svg
    assert i18n.t("model.minilm", "en") in svg  # the model's display name
    assert not s.dialogs and not s.crashed


def test_the_exported_grid_zooms_on_a_clicked_head_offline(
    chromium: Any, minilm: attnviz.PretrainedModel, tmp_path: Path
) -> None:
    att = minilm.attend(TEXT)
    path = tmp_path / "grid.html"
    path.write_text(figure_html(views.model_view(att), {"text": TEXT, "model": att.model}), encoding="utf-8")
    context = chromium.new_context(offline=True, viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(path.as_uri())
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
        layer, head = 2, 5
        spot = page.locator(".js-plotly-plot").evaluate(
            """(gd, [layer, head]) => { const L = gd._fullLayout, box = gd.getBoundingClientRect();
               return {x: box.left + L.xaxis._offset + L.xaxis.l2p(head),
                       y: box.top + L.yaxis._offset + L.yaxis.l2p(layer)}; }""",
            [layer, head],
        )
        page.mouse.move(spot["x"], spot["y"])
        page.mouse.click(spot["x"], spot["y"])
        page.wait_for_function(
            "([h]) => { const r = document.querySelector('.js-plotly-plot').layout.xaxis.range;"
            " return Math.abs(r[0] - (h - 0.5)) < 1e-9 && Math.abs(r[1] - (h + 0.5)) < 1e-9; }",
            arg=[head],
            timeout=30_000,
        )
        assert not [e for e in errors if "Content Security Policy" in e]
    finally:
        context.close()
