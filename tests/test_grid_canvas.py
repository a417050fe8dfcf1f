"""The canvas grid's message (attnviz/views/grid_canvas.py): what the explorer's all-heads grid
draws from is `model_view`'s own mosaic, number for number, with its words, colour scale and
range; the head in focus, the heads switched off and a decoder's key/value groups are those
`mark_off` and `mark_groups` draw; any visitor token travels as plain text whatever it holds."""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pytest

from attnviz import views
from attnviz.result import Attention
from attnviz.views import decoder as decoder_views
from attnviz.views import grid_canvas
from attnviz.views.ablation import OFF_COLOR, mark_off
from attnviz.views.decoder import grid_thumb
from attnviz.views.grid import block_mean

from .test_decoder_app_views import causal
from .test_views import make_att, random_att

PALETTE = {m: {"heading": "#000000", "label": "#808495", "background": "#ffffff"} for m in ("light", "dark")}


def _read(att: Attention, **kw: Any) -> tuple[dict[str, Any], np.ndarray]:
    return grid_canvas.read(grid_canvas.grid_payload(att, palette=PALETTE, **kw))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal cell for cell, NaN (the gaps between thumbnails) where the other has NaN."""
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("thumb", [32, 4])
def test_the_mosaic_is_the_model_views_own(tired: Attention, lang: str, thumb: int) -> None:
    head, z = _read(tired, focus=(2, 3), thumb=thumb, lang=lang)
    fig = views.model_view(tired, focus=(2, 3), thumb=thumb, lang=lang)
    trace = fig.data[0]
    assert z.dtype == np.float32 and _same(z, np.asarray(trace.z, dtype=np.float32))
    assert (head["thumb"], head["gap"]) == (fig.layout.meta["thumb"], fig.layout.meta["gap"])
    assert (head["layers"], head["heads"]) == (tired.n_layers, tired.n_heads)
    title, note = fig.layout.title.text.split("<br><sup>")
    assert head["title"] == title and head["notes"] == [note.removesuffix("</sup>")]
    assert (head["xtitle"], head["ytitle"]) == (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text)
    assert head["bar"] == trace.colorbar.title.text and head["height"] == fig.layout.height
    assert head["scale"] == [[float(p), c] for p, c in trace.colorscale]
    assert (head["zmin"], head["zmax"]) == (trace.zmin, trace.zmax)
    # the hover, head by head in the pick markers' order, the same words as plain text
    assert ["<br>".join(lines) for lines in head["hover"]] == [html.unescape(h) for h in fig.data[1].hovertext]
    (outline,) = fig.layout.shapes
    assert head["focus"] == [2, 3] == [outline.y0 + 0.5, outline.x0 + 0.5]
    assert head["focus_colour"] == outline.line.color and head["off"] == [] and head["groups"] == []


def test_thumbnail_by_thumbnail_the_block_means_of_each_head() -> None:
    att = random_att(3, 4, 40, seed=3)
    head, z = _read(att, thumb=8)
    step = head["thumb"] + head["gap"]
    thumbs = block_mean(att.weights, 8)
    for layer, h in np.ndindex(3, 4):
        cell = z[layer * step : layer * step + 8, h * step : h * step + 8]
        np.testing.assert_array_equal(cell, thumbs[layer, h])
    assert np.isnan(z[8:step, :]).all() and np.isnan(z[:, 8:step]).all()  # the gaps


def test_heads_switched_off_are_the_crosses_mark_off_draws(tired: Attention) -> None:
    off = [(4, 1), (0, 2), (4, 1)]
    head, _ = _read(tired, off=off)
    fig = mark_off(views.model_view(tired), off)
    crosses = {(int(s.y0 + s.y1) // 2, int(s.x0 + s.x1) // 2) for s in fig.layout.shapes if s.type == "line"}
    assert head["off"] == [[0, 2], [4, 1]] and {tuple(h) for h in head["off"]} == crosses
    assert head["off_colour"] == OFF_COLOR and head["focus"] is None


def test_a_decoders_groups_and_kv_labels_are_mark_groups_own() -> None:
    att = causal(4, 9, 12, kv=3)
    for lang in ("en", "zh"):
        head, _ = _read(att, focus=(1, 4), lang=lang)
        fig = decoder_views.mark_groups(views.model_view(att, focus=(1, 4), lang=lang), att, lang=lang)
        rects = [s for s in fig.layout.shapes if s.type == "rect" and s.line.width == 2]
        assert [(g["heads"][0] - 0.48, g["heads"][-1] + 0.48) for g in head["groups"]] == [(s.x0, s.x1) for s in rects]
        assert [g["colour"] for g in head["groups"]] == [s.line.color for s in rects]
        for h, tick in enumerate(fig.layout.xaxis.ticktext):  # "4<br><span style='color:C'>kv 1</span>"
            label, colour = head["kv"][h]
            assert tick == f"{h}<br><span style='color:{colour}'>{label}</span>"
        assert fig.layout.title.text.endswith(f"<br><sup>{head['group_note']}</sup>")
    plain, _ = _read(causal(2, 4, 6, kv=None))
    assert plain["groups"] == [] and plain["kv"] == [None] * 4 and plain["group_note"] is None


def test_a_cross_attention_thumbnail_fills_the_top_left_of_its_cell() -> None:
    w = np.random.default_rng(1).random((2, 3, 3, 5)).astype(np.float32)
    att = Attention(["a", "b", "c"], w / w.sum(-1, keepdims=True), "toy", key_tokens=("k0", "k1", "k2", "k3", "k4"))
    head, z = _read(att)
    assert _same(z, np.asarray(views.model_view(att).data[0].z, dtype=np.float32))
    step = head["thumb"] + head["gap"]
    np.testing.assert_array_equal(z[step : step + 3, 2 * step : 2 * step + 5], att.weights[1, 2])
    assert np.isnan(z[step + 3 : 2 * step, 2 * step : 2 * step + 5]).all()


def test_hostile_tokens_are_plain_text_in_the_hover() -> None:
    evil = ["<b>x</b>", "&amp;", "{w}", "<br>", "</script><img src=x onerror=alert(1)>", "\u202e", "a\nb"]
    n = len(evil)
    w = np.zeros((1, len(evil), n, n), dtype=np.float32)
    for h in range(n):
        w[0, h, :, h] = 1.0  # head h looks at token h only
    head, _ = _read(make_att(w, tokens=evil))
    for h, token in enumerate(evil):
        lines = head["hover"][h]
        assert len(lines) == 3 and f"{token} ({h})" in lines[1], lines  # as typed: not escaped, never a line break
    assert "&lt;" not in str(head["hover"])


def test_the_smollm2_grid_keeps_the_payload_budget() -> None:
    att = causal(30, 9, 128, kv=3)
    data = grid_canvas.grid_payload(att, thumb=grid_thumb(att), palette=PALETTE)
    assert len(data) <= 1.0e6
    head, _ = grid_canvas.read(data)
    assert head["thumb"] == 16 and len(head["hover"]) == 270


def test_a_focus_outside_the_model_and_a_foreign_payload_are_refused(tired: Attention) -> None:
    with pytest.raises(IndexError):
        grid_canvas.grid_payload(tired, focus=(6, 0), palette=PALETTE)
    with pytest.raises(ValueError, match="thumb"):
        grid_canvas.grid_payload(tired, thumb=0, palette=PALETTE)
    with pytest.raises(ValueError, match="all-heads grid"):
        grid_canvas.read(b"AVM1" + bytes(8))
