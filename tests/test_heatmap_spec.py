"""One heatmap specification (attnviz/views/spec.py) feeds the three renderers of a one-head map:
the Plotly figure (the explorer's HTML download, the lesson's page), the app's canvas and the
lesson handout's SVG. Each shows the specification's tokens, title, note and colour range, on the
embedded MiniLM's real attention; the explorer makes the Plotly figure only for its download."""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from plotly.colors import sample_colorscale
from streamlit.testing.v1 import AppTest

from attnviz import views
from attnviz.lesson.handout import heatmap_svg
from attnviz.result import Attention
from attnviz.views import decoder, token_canvas

from .test_decoder_app_views import causal
from .test_lazyviews import spy_on

PALETTE = {m: {"heading": "#000000", "label": "#808495", "background": "#ffffff"} for m in ("light", "dark")}


def _figure_words(spec: views.HeatmapSpec) -> tuple[list[str], list[str], str, tuple[float, float]]:
    """Row and column labels, the title with its note (one line apart) and the colour range of
    the Plotly figure, as plotly.js reads them."""
    fig = views.heatmap_figure(spec)
    trace = fig.data[0]
    head, *notes = fig.layout.title.text.split("<br><sup>")  # margins.top_title: the note in small print
    title = "\n".join([head, " ".join(n.removesuffix("</sup>") for n in notes)] if notes else [head])
    z = np.asarray(trace.z)
    lo_hi = (float(z.min()), float(z.max())) if trace.zauto else (trace.zmin, trace.zmax)
    return (
        [html.unescape(s) for s in fig.layout.yaxis.ticktext],
        [html.unescape(s) for s in fig.layout.xaxis.ticktext],
        title,
        lo_hi,
    )


def _canvas_words(spec: views.HeatmapSpec) -> tuple[list[str], list[str], str, tuple[float, float]]:
    head, z = token_canvas.read(token_canvas.map_payload(spec, palette=PALETTE))
    fixed = head["zmin"] is not None and head["zmax"] is not None  # canvas_common.js `range`
    lo_hi = (head["zmin"], head["zmax"]) if fixed else (float(z.min()), float(z.max()))
    return head["rows"], head["cols"], head["title"] + (f"\n{head['note']}" if head["note"] else ""), lo_hi


def _svg_words(spec: views.HeatmapSpec) -> tuple[list[str], list[str], str, tuple[str, str]]:
    """What the handout's SVG writes: heading (and note), row labels, column labels, the colour
    bar's two ends and its title, in that order."""
    texts = [html.unescape(s) for s in re.findall(r"<text[^>]*>([^<]*)</text>", heatmap_svg(spec))]
    heading = 2 if spec.note else 1
    n_q, n_k = spec.z.shape
    rows, cols = texts[heading : heading + n_q], texts[heading + n_q : heading + n_q + n_k]
    assert texts[-1] == spec.bar
    return rows, cols, "\n".join(texts[:heading]), (texts[-3], texts[-2])


@pytest.mark.parametrize("zmax", [1.0, None])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_figure_the_canvas_and_the_handout_show_one_specification(
    tired: Attention, zmax: float | None, lang: str
) -> None:
    for layer, head in ((0, 0), (3, 7), (5, None)):
        spec = views.heatmap_spec(tired, layer, head, zmax=zmax, lang=lang)
        f_rows, f_cols, f_title, f_range = _figure_words(spec)
        c_rows, c_cols, c_title, c_range = _canvas_words(spec)
        s_rows, s_cols, s_title, s_range = _svg_words(spec)
        assert f_rows == f_cols == c_rows == c_cols == s_rows == s_cols == list(tired.tokens)
        assert f_title == c_title == s_title == spec.title
        lo, hi = spec.bounds()
        assert (
            f_range
            == c_range
            == (lo, hi)
            == ((0.0, 1.0) if zmax else (tired.head(layer, head).min(), tired.head(layer, head).max()))
        )
        assert s_range == (format(lo, ".3g"), format(hi, ".3g"))


def test_a_grouped_head_carries_its_note_in_all_three() -> None:
    att = causal(2, 9, 12, kv=3)  # a decoder whose query heads share key/value heads
    spec = views.heatmap_spec(att, 1, 4, zmax=1.0)
    assert spec.note == decoder.group_note(att, 4) and spec.note
    words = f"{spec.title}\n{spec.note}"
    assert _canvas_words(spec)[2] == _svg_words(spec)[2] == words
    assert _figure_words(spec)[2] == words


def test_the_handout_paints_the_figures_colours(tired: Attention) -> None:
    """The SVG's cells are the colour scale the figure and the canvas use, mixed as plotly.js mixes it."""
    spec = views.heatmap_spec(tired, 2, 3)
    lo, hi = spec.bounds()
    values = np.linspace(lo, hi, 41)
    ours = [tuple(int(c[k : k + 2], 16) for k in (1, 3, 5)) for c in spec.colours(values)]
    plotly = sample_colorscale([list(s) for s in spec.scale], list((values - lo) / (hi - lo)))
    theirs = [tuple(round(float(v)) for v in re.findall(r"[\d.]+", c)) for c in plotly]
    assert all(max(abs(a - b) for a, b in zip(x, y, strict=True)) <= 1 for x, y in zip(ours, theirs, strict=True))
    svg = heatmap_svg(spec)
    n = tired.n
    fills = re.findall(r'<rect [^>]*fill="(#[0-9a-f]{6})"><title>', svg)
    assert fills == spec.colours(spec.z) and len(fills) == n * n


@pytest.mark.slow
def test_the_explorer_makes_its_plotly_map_only_for_the_download(
    monkeypatch: pytest.MonkeyPatch, local_deployment: None
) -> None:
    calls: Counter[str] = spy_on(monkeypatch, {"figure": (views, "heatmap_figure"), "spec": (views, "heatmap_spec")})
    at = AppTest.from_file(str(Path(__file__).resolve().parent / "app_entry.py"), default_timeout=240)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert calls["spec"] == 1 and calls["figure"] == 0  # the canvas drew the map; no figure yet
    assert any(e.proto.id.endswith("dl_heatmap_html") for e in at.get("download_button"))
