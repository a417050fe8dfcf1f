"""Issue 24.1: the charts go to the browser with theme=None and attnviz's own copy of Streamlit's
light/dark chart look (attnviz/app/plot_theme.py), in a form Streamlit's second Plotly.react
leaves undrawn: no template object, a datarevision, no one-dimensional typed arrays, no object
in layout.meta. Nothing of Streamlit's placeholder colours ("#000001".."#000040", resolved only
by its own chart theme in the browser) may reach a chart."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from streamlit import config
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import views
from attnviz.app import plot_theme, redraw
from attnviz.app.streamlit_adapter import release, theme_options_set

# Streamlit's placeholders: streamlit/elements/lib/streamlit_plotly_theme.py, CATEGORY_0 .. BG_MIX.
PLACEHOLDER = re.compile(r"#0000[0-4][0-9](?![0-9a-f])", re.IGNORECASE)


def _placeholders(spec: Any) -> list[str]:
    return PLACEHOLDER.findall(json.dumps(spec))


def _typed_1d(value: Any, path: str = "") -> list[str]:
    """Where `value` holds a one-dimensional base64 typed array."""
    if isinstance(value, dict):
        if "bdata" in value and "," not in str(value.get("shape", "")):
            return [path]
        return [p for k, v in value.items() for p in _typed_1d(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _typed_1d(v, f"{path}[{i}]")]
    return []


def _explorer_and_explain_figures(att: attnviz.Attention) -> dict[str, go.Figure]:
    rng = np.random.default_rng(0)
    scores = rng.random((att.n_layers, att.n_heads))
    return {
        "heatmap": views.heatmap(att, 2, 3),
        "mean heatmap": views.heatmap(att, 1, None, zmax=1.0),
        "grid": views.model_view(att, focus=(2, 3)),
        "head view": redraw.lines_as_shapes(views.head_view(att, 2)),
        "graph view": redraw.lines_as_shapes(views.graph_view(att, 2, 3)),
        "token focus": views.token_focus(att, 2, 3, 4),
        "explain bars": views.token_bars(att.tokens, {"saliency": rng.random(att.n)}, title="saliency"),
        "explain grid": views.layer_head_grid(scores, title="score"),
    }


@pytest.mark.parametrize("mode", plot_theme.MODES)
def test_the_template_is_valid_plotly_with_no_placeholder_colour(mode: plot_theme.Mode) -> None:
    template = plot_theme.template(mode)  # the validating constructor: every property exists
    assert isinstance(template, go.layout.Template)
    spec = template.to_plotly_json()
    assert not _placeholders(spec)
    assert not _placeholders(plot_theme.template_json(mode))
    layout = spec["layout"]
    # the page's background: 1.67's warm palette, the classic one before it
    page = {"light": "#FFFFFF", "dark": "#171614"} if release() >= (1, 67) else {"light": "#ffffff", "dark": "#0e1117"}
    assert layout["paper_bgcolor"] == layout["plot_bgcolor"] == page[mode]
    assert layout["font"]["color"] == {"light": "#808495", "dark": "#e6eaf1"}[mode]  # Streamlit's gray70
    assert len(layout["colorway"]) == 10 and all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in layout["colorway"])
    assert plot_theme.template(mode) is template  # one per mode, built once


def test_light_and_dark_differ_where_the_background_does() -> None:
    light, dark = (plot_theme.template_json(m)["layout"] for m in plot_theme.MODES)
    assert light["paper_bgcolor"] != dark["paper_bgcolor"]
    assert light["title"]["font"]["color"] != dark["title"]["font"]["color"]
    assert [c for _p, c in light["colorscale"]["sequential"]] == [c for _p, c in dark["colorscale"]["sequential"]][::-1]


@pytest.mark.parametrize("mode", plot_theme.MODES)
def test_every_explorer_and_explain_figure_goes_out_themed_and_unchanged(
    tired: attnviz.Attention, mode: plot_theme.Mode
) -> None:
    for name, fig in _explorer_and_explain_figures(tired).items():
        before = fig.to_json()
        sent = json.loads(pio.to_json(plot_theme.for_browser(fig, mode), validate=False))
        assert fig.to_json() == before, name  # the (maybe cached, shared) figure is untouched
        assert not _placeholders(sent), name
        layout = sent["layout"]
        assert layout.get("template") is None, name  # absent or null: no template object
        assert layout["datarevision"] == plot_theme.DATAREVISION, name
        assert not isinstance(layout.get("meta"), dict), name
        assert not _typed_1d(sent["data"]), name
        assert layout["paper_bgcolor"] == plot_theme.template_json(mode)["layout"]["paper_bgcolor"], name
        own = fig.to_dict()
        for key, value in own["layout"].items():  # the figure's own layout wins over the look
            if key not in ("template", "meta", "xaxis", "yaxis"):
                assert layout[key] == value or isinstance(value, dict), (name, key)
        for axis in ("xaxis", "yaxis"):
            for key, value in own["layout"].get(axis, {}).items():
                if not isinstance(value, dict):
                    assert layout[axis][key] == value, (name, axis, key)
        for mine, theirs in zip(sent["data"], own["data"], strict=True):
            assert mine["type"] == theirs["type"], name
            assert mine.get("colorscale") == theirs.get("colorscale"), name  # views keep their scales
            go.Figure({"data": [mine]})  # still valid plotly
        assert json.loads(json.dumps(sent["data"])) == sent["data"]


def test_a_template_fills_every_axis_and_keeps_the_figures_own_values() -> None:
    fig = go.Figure(
        {
            "data": [{"type": "bar", "y": [1, 2]}, {"type": "scatter", "y": [2, 1], "xaxis": "x2", "yaxis": "y2"}],
            "layout": {"xaxis": {"showgrid": True, "title": {"text": "X"}}, "paper_bgcolor": "#123456",
                       "title": {"text": "T", "font": {"size": 30}}},
        }
    )  # fmt: skip
    sent = plot_theme.for_browser(fig, "dark").to_plotly_json()
    layout = sent["layout"]
    look = plot_theme.template_json("dark")["layout"]
    assert layout["xaxis"]["showgrid"] is True and layout["xaxis"]["title"]["text"] == "X"
    assert layout["xaxis"]["title"]["font"] == look["xaxis"]["title"]["font"]
    assert layout["xaxis2"]["tickfont"] == look["xaxis"]["tickfont"]  # an axis only a trace names
    assert layout["yaxis2"]["gridcolor"] == look["yaxis"]["gridcolor"]
    assert "xaxis3" not in layout and "ternary" not in layout and "coloraxis" not in layout
    assert layout["paper_bgcolor"] == "#123456" and layout["plot_bgcolor"] == look["plot_bgcolor"]
    assert layout["title"]["font"]["size"] == 30 and layout["title"]["font"]["color"] == look["title"]["font"]["color"]
    assert sent["data"][1]["marker"]["line"]["width"] == 0  # Streamlit's scatter default
    assert "marker" not in sent["data"][0]


def test_one_dimensional_typed_arrays_become_lists_and_two_dimensional_ones_stay() -> None:
    x = np.array([0.3, 1.5, np.float32(2.25)], dtype=np.float32)
    z = np.arange(6, dtype=np.float32).reshape(2, 3)
    fig = go.Figure({"data": [{"type": "scatter", "x": x, "y": np.array([1, 2, 3], dtype=np.int8)},
                              {"type": "heatmap", "z": z}]})  # fmt: skip
    data = plot_theme.for_browser(fig, "light").to_plotly_json()["data"]
    assert data[0]["x"] == [0.3, 1.5, 2.25]  # float32's shortest decimals
    assert data[0]["y"] == [1, 2, 3]
    assert isinstance(data[1]["z"], dict) and "bdata" in data[1]["z"]  # compact, and spared by plotly.js


def test_an_animation_keeps_its_frames_and_sliders() -> None:
    frames = [{"name": str(i), "data": [{"type": "heatmap", "z": [[i, 1], [1, i]]}]} for i in range(3)]
    fig = go.Figure({"data": [{"type": "heatmap", "z": [[0, 1], [1, 0]]}], "frames": frames,
                     "layout": {"sliders": [{"steps": [{"label": "0", "method": "animate", "args": [["0"]]}]}]}})  # fmt: skip
    sent = plot_theme.for_browser(fig, "light")
    assert [f.name for f in sent.frames] == ["0", "1", "2"]
    assert [list(row) for row in sent.frames[2].data[0].z] == [[2, 1], [1, 2]]
    assert sent.layout.sliders[0].steps[0].label == "0"


def test_meta_goes_as_a_one_element_list() -> None:
    fig = go.Figure({"data": [], "layout": {"meta": {"thumb": 8, "gap": 1}}})
    assert plot_theme.for_browser(fig, "light").layout.meta == ({"thumb": 8, "gap": 1},)


def test_the_selection_modes_are_the_ones_streamlits_chart_element_would_set() -> None:
    # PlotlyChart.tsx (1.67): clickmode "event+select" with points, else "none"; hovermode
    # "closest"; dragmode "pan" with points, else "select" with box, else "lasso".
    assert plot_theme.selection_layout(()) == {}
    assert plot_theme.selection_layout(("points",)) == {"clickmode": "event+select", "hovermode": "closest",
                                                        "dragmode": "pan"}  # fmt: skip
    assert plot_theme.selection_layout(("box", "lasso"))["dragmode"] == "select"
    assert plot_theme.selection_layout(("lasso",)) == {"clickmode": "none", "hovermode": "closest", "dragmode": "lasso"}
    fig = go.Figure({"data": [], "layout": {"hovermode": "x"}})
    assert plot_theme.for_browser(fig, "light", ("points",)).layout.hovermode == "x"  # the figure's own wins


def test_a_theme_option_of_the_deployment_hands_the_charts_back_to_streamlits_theme() -> None:
    assert not theme_options_set()  # the project's config.toml sets no [theme]
    config.set_option("theme.chartCategoricalColors", ["#ff0000", "#00ff00"])
    try:
        assert theme_options_set()
    finally:
        config.set_option("theme.chartCategoricalColors", None)
    assert not theme_options_set()


def _one_chart() -> None:
    """A page with one chart through the app's chokepoint, reporting its points when clicked."""
    import numpy as np
    import plotly.graph_objects as go

    from attnviz.app import charts

    x = np.array([1, 2, 3], dtype=np.int64)
    charts.chart(go.Figure({"data": [{"type": "scatter", "x": x, "y": [3, 1, 2]}]}), key="chart_one",
                 on_select="rerun", selection_mode="points")  # fmt: skip


def _page(customised: bool) -> AppTest:
    at = AppTest.from_function(_one_chart, default_timeout=60)
    if customised:
        config.set_option("theme.base", "dark")
    try:
        at.run()
    finally:
        config.set_option("theme.base", None)
    assert not at.exception
    return at


def test_charts_chart_sends_theme_none_and_the_themed_figure() -> None:
    (element,) = _page(customised=False).get("plotly_chart")
    assert element.proto.theme == ""  # theme=None
    spec = json.loads(element.proto.spec)
    assert spec["layout"].get("template") is None and not _placeholders(spec)
    assert spec["layout"]["paper_bgcolor"] == plot_theme.template_json("light")["layout"]["paper_bgcolor"]
    assert spec["layout"]["clickmode"] == "event+select"  # the page's chart reports its points
    assert spec["data"][0]["x"] == [1, 2, 3]


def test_charts_chart_keeps_streamlits_theme_under_a_deployment_theme() -> None:
    (element,) = _page(customised=True).get("plotly_chart")
    assert element.proto.theme == "streamlit"
    assert "template" in json.loads(element.proto.spec)["layout"]
