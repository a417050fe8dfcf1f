"""The canvas map's message (attnviz/views/token_canvas.py): what the explorer's heatmap draws
from is the attention's own float32 map, bit for bit, with the words, colour scale and range of
`views.heatmap`'s figure (which the HTML download still exports); any visitor token travels as
plain text whatever it holds; and it is made without plotly, so a cold server's first map does
not need what plotly reads of pandas (app/coldstart/warmup.py)."""

from __future__ import annotations

import json
import struct
from functools import partial
from typing import Any

import numpy as np
import pytest

import attnviz
from attnviz import views
from attnviz.app.canvas import grid_canvas as app_grid_canvas
from attnviz.app.canvas import token_canvas as app_token_canvas
from attnviz.result import Attention
from attnviz.views import decoder as decoder_views
from attnviz.views import grid_canvas, token_canvas

from .test_decoder_app_views import causal
from .test_imports import fresh_python

PALETTE = {m: {"heading": "#000000", "label": "#808495", "background": "#ffffff"} for m in ("light", "dark")}


def _read(
    att: Attention, layer: int, head: int | None, *, after: tuple[str, int] | None = None, **kw: Any
) -> tuple[dict[str, Any], np.ndarray]:
    spec = views.heatmap_spec(att, layer, head, **kw)
    return token_canvas.read(token_canvas.map_payload(spec, palette=PALETTE, after=after))


def _plotly_text(text: str) -> str:
    return text.replace("<extra></extra>", "")


@pytest.mark.parametrize("zmax", [1.0, None])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_map_is_the_heatmap_figures_own_bit_for_bit(tired: Attention, zmax: float | None, lang: str) -> None:
    for layer, head in ((0, 0), (3, 7), (5, None)):
        head_, z = _read(tired, layer, head, zmax=zmax, lang=lang)
        fig = views.heatmap(tired, layer, head, zmax=zmax, lang=lang)
        trace = fig.data[0]
        assert z.dtype == np.float32 and np.array_equal(z, np.asarray(trace.z))  # the numbers hover shows
        assert np.array_equal(z, np.asarray(tired.head(layer, head), dtype=np.float32))
        assert head_["rows"] == head_["cols"] == list(tired.tokens)
        assert head_["title"] == fig.layout.title.text and head_["note"] is None
        assert (head_["xtitle"], head_["ytitle"]) == (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text)
        assert head_["bar"] == trace.colorbar.title.text and head_["height"] == fig.layout.height
        marks = {"{q}": "%{y}", "{k}": "%{x}", "{w}": "%{z:.6f}"}
        hover = "<br>".join(head_["hover"])
        for mark, field in marks.items():
            hover = hover.replace(mark, field)
        assert hover == _plotly_text(trace.hovertemplate)
        assert head_["scale"] == [[float(p), c] for p, c in trace.colorscale]
        fixed = None if trace.zauto else (trace.zmin, trace.zmax)
        assert (head_["zmin"], head_["zmax"]) == (fixed or (None, None))


def test_a_decoder_note_is_its_own_line_as_the_figure_has_it() -> None:
    att = causal(2, 9, 12, kv=3)  # a decoder's grouped heads (tests/test_decoder_app_views.py)
    note = decoder_views.group_note(att, 4)
    head_, _ = _read(att, 1, 4, zmax=1.0)
    fig = views.heatmap(att, 1, 4)
    assert note and head_["note"] == note
    assert fig.layout.title.text.replace("</sup><br><sup>", " ") == f"{head_['title']}<br><sup>{head_['note']}</sup>"
    assert decoder_views.group_note(att, None) is None  # the mean of the heads reads every group


HOSTILE = ["<img src=x onerror=alert(1)>", '"}]', "\u2028", "\\u0000", "=cmd|' /C calc'!A0", "注意力", "\0", "{w}"]


@pytest.mark.parametrize("pad", range(4))
def test_hostile_tokens_travel_verbatim_and_the_map_stays_aligned(pad: int) -> None:
    tokens = [*HOSTILE, "x" * pad]
    n = len(tokens)
    weights = np.random.default_rng(pad).random((1, 1, n, n), dtype=np.float32)
    att = Attention(tokens=tokens, weights=weights / weights.sum(-1, keepdims=True), model="m", text="t")
    data = token_canvas.map_payload(views.heatmap_spec(att, 0, 0, zmax=1.0), palette=PALETTE)
    (length,) = struct.unpack("<I", data[4:8])
    start = 8 + length + (-(8 + length) % 4)
    assert start % 4 == 0 and len(data) == start + 4 * n * n  # the float32 block starts aligned
    head_, z = token_canvas.read(data)
    assert head_["rows"] == tokens  # as typed: the canvas writes text, never markup
    assert json.loads(data[8 : 8 + length]) == head_
    assert np.array_equal(z, att.head(0, 0))


def test_the_first_draw_waits_only_for_what_it_is_told() -> None:
    """A canvas chart's first draw waits for the element its header names (app/canvas/canvas_common.js
    `whenShown`), at most so long; the map and the grid alike; the app sends plain selectors only."""
    att = causal(1, 2, 5, kv=None)
    box = (".st-key-box textarea", 250)
    assert _read(att, 0, 0, zmax=1.0)[0]["after"] is None  # drawn at once
    assert _read(att, 0, 0, zmax=1.0, after=box)[0]["after"] == {"selector": box[0], "wait_ms": 250}
    grid = partial(grid_canvas.grid_payload, att, palette=PALETTE)
    assert grid_canvas.read(grid())[0]["after"] is None
    assert grid_canvas.read(grid(after=box))[0]["after"] == {"selector": box[0], "wait_ms": 250}
    assert app_token_canvas.waiting(box[0]) == (box[0], app_token_canvas.AFTER_WAIT_MS)
    for bad in ("a'); alert(1); ('", "</script>", "[onload]"):  # a selector of ours, plain, or nothing
        with pytest.raises(ValueError, match="not a plain selector"):
            app_token_canvas.token_map(views.heatmap_spec(att, 0, 0, zmax=1.0), "k", after=bad)
        with pytest.raises(ValueError, match="not a plain selector"):
            app_grid_canvas.head_grid(att, None, 32, (), "k", after=bad)


def test_what_is_not_a_map_is_refused() -> None:
    with pytest.raises(ValueError, match="not a token map"):
        token_canvas.read(b"PNG!" + bytes(12))


def test_the_embedded_model_map_is_exact_at_512_tokens(minilm: attnviz.PretrainedModel) -> None:
    att = minilm.attend(" ".join(["word"] * 600))
    _, z = _read(att, 5, 11, zmax=1.0)
    assert z.shape == (att.n, att.n) == (512, 512)
    assert np.array_equal(z, np.asarray(att.head(5, 11), dtype=np.float32))


def test_the_map_needs_neither_plotly_nor_pandas() -> None:
    """What the explorer sends before app/coldstart/warmup.py's `warm_up`: with a half-imported pandas in
    sys.modules (another visitor's first import under way) plotly's figure code fails on it;
    the map's payload does not look at plotly or pandas at all."""
    out = fresh_python(
        "import json, sys, types, numpy as np\n"
        "sys.modules['pandas'] = types.ModuleType('pandas')\n"
        "from attnviz.result import Attention\n"
        "from attnviz.views import token_canvas\n"
        "from attnviz.views.spec import heatmap_spec\n"
        "w = np.full((1, 2, 3, 3), 1 / 3, dtype=np.float32)\n"
        "att = Attention(tokens=['a', 'b', 'c'], weights=w, model='m', text='a b c')\n"
        "data = token_canvas.map_payload(heatmap_spec(att, 0, 1, zmax=1.0), palette={})\n"
        "print(json.dumps([data.hex(), 'plotly.graph_objs' in sys.modules, 'torch' in sys.modules]))\n"
    )
    w = np.full((1, 2, 3, 3), 1 / 3, dtype=np.float32)
    att = Attention(tokens=["a", "b", "c"], weights=w, model="m", text="a b c")
    assert out == [token_canvas.map_payload(views.heatmap_spec(att, 0, 1, zmax=1.0), palette={}).hex(), False, False]
