"""Issue 24.1: the explorer's head and graph views reach the browser with their lines as path
shapes (one SVG element per head and opacity level, not one per link), drawing exactly the
links the views compute; the clickable token markers stay traces."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import views
from attnviz.app import redraw

APP = str(Path(__file__).resolve().parent / "app_entry.py")
TIRED = "The animal didn't cross the street because it was tired."


def _segments_of_traces(fig: go.Figure) -> set[tuple[str, float, float, float, float, float]]:
    """(colour, opacity, x0, y0, x1, y1) of every straight segment of the hover-less line traces."""
    out = set()
    for tr in fig.data:
        if tr.mode != "lines":
            continue
        xs, ys = np.asarray(tr.x, dtype=np.float64), np.asarray(tr.y, dtype=np.float64)
        for i in range(len(xs) - 1):
            if not np.isnan([xs[i], ys[i], xs[i + 1], ys[i + 1]]).any():
                seg = (round(xs[i], 5), round(ys[i], 5), round(xs[i + 1], 5), round(ys[i + 1], 5))
                out.add((tr.line.color, float(tr.opacity), *seg))
    return out


def _segments_of_shapes(shapes: list[dict[str, Any]]) -> set[tuple[str, float, float, float, float, float]]:
    out = set()
    for shape in shapes:
        assert shape["type"] == "path" and shape["xref"] == "x" and shape["yref"] == "y"
        for sub in shape["path"].split("M")[1:]:
            points = [tuple(float(v) for v in p.split(",")) for p in sub.split("L")]
            for (x0, y0), (x1, y1) in itertools.pairwise(points):
                seg = (round(x0, 5), round(y0, 5), round(x1, 5), round(y1, 5))
                out.add((shape["line"]["color"], float(shape["opacity"]), *seg))
    return out


def test_a_path_shape_draws_each_nan_free_run_exactly() -> None:
    xs = np.array([0, 1, np.nan, 0, 1, np.nan], dtype=np.float32)
    ys = np.array([0.3, 5, np.nan, 2, 7.25, np.nan], dtype=np.float32)
    assert redraw.path_of(xs, ys) == "M0,0.3L1,5M0,2L1,7.25"  # float32 0.3 as 0.3, not 0.30000001
    assert redraw.path_of(np.array([1, 2]), np.array([3, 4])) == "M1,3L2,4"


def test_lines_as_shapes_keeps_every_link_legend_and_clickable_marker(tired: attnviz.Attention) -> None:
    for fig in (views.head_view(tired, 2), views.graph_view(tired, 2, 0, threshold=0.05)):
        drawn = redraw.lines_as_shapes(fig)
        go.Figure(drawn.to_dict())  # every property valid for plotly (validating constructor)
        assert not [tr for tr in drawn.data if tr.mode == "lines"]
        assert [tr.customdata for tr in drawn.data] == [tr.customdata for tr in fig.data if tr.mode != "lines"]
        shapes = [s.to_plotly_json() for s in drawn.layout.shapes]
        assert len(shapes) == len([tr for tr in fig.data if tr.mode == "lines"]) > 1
        assert _segments_of_shapes(shapes) == _segments_of_traces(fig)
        legend = [(tr.name, tr.showlegend is not False) for tr in fig.data if tr.mode == "lines"]
        assert [(s["name"], s["showlegend"]) for s in shapes] == legend
    heatmap = views.heatmap(tired, 0, 0)
    assert redraw.lines_as_shapes(heatmap) is heatmap  # nothing to convert: not even copied


@pytest.mark.slow
def test_the_explorer_sends_the_head_and_graph_lines_as_shapes(minilm: attnviz.PretrainedModel) -> None:
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update({"text": TIRED, "layer": "2", "head": "3", "views": "1"})  # their expander open
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    specs = {e.proto.id.rsplit("-", 1)[-1]: json.loads(e.proto.spec) for e in at.get("plotly_chart")}
    att = minilm.attend(TIRED)
    highlight = at.session_state["highlight"]
    for key, fig in (
        ("chart_head_view", views.head_view(att, 2, heads=[3], highlight=None if highlight < 0 else highlight)),
        ("chart_graph", views.graph_view(att, 2, 3, threshold=at.session_state["threshold"])),
    ):
        spec = specs[key]
        assert not [tr for tr in spec["data"] if tr.get("mode") == "lines"], key
        assert _segments_of_shapes(spec["layout"]["shapes"]) == _segments_of_traces(fig), key
        assert any(tr.get("customdata") for tr in spec["data"]), key  # token markers still clickable
