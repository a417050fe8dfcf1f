"""Streamlit's chart look baked into each figure, so that the browser draws every chart once.

Streamlit's chart element, once mounted, hands a JSON copy of the figure to `Plotly.react` a
second time, and plotly.js redraws in full when the copy holds a `layout.template` or an object in
`layout.meta` (compared by identity), data without a `layout.datarevision`, one-dimensional typed
arrays, or click/hover/drag modes other than the element's. `for_browser` removes each cause
(tests/test_theme_browser.py counts the redraws); a constant datarevision is safe, as new data
makes a new chart element. The colours are those Streamlit's frontend resolves for its light and
dark themes (CustomTheme.tsx over streamlit_plotly_theme.py; tests/test_streamlit_adapter.py
compares the shapes). Views keep their own colour scales: the look fills only what a figure leaves
unset. A deployment with a [theme] option of its own gets Streamlit's chart theme (charts.chart).
"""

from __future__ import annotations

import base64
import copy
import functools
import re
from typing import Any, Literal

import numpy as np
import plotly.graph_objects as go

from ..views._base import figure

Mode = Literal["light", "dark"]
MODES: tuple[Mode, ...] = ("light", "dark")
DATAREVISION = "attnviz"  # constant on purpose: a chart with new data is a new mount (module doc)
# layout.meta goes to the browser as a list: plotly.js compares an object there by identity (a
# full redraw for Streamlit's JSON copy) and a list by the datarevision. Read it in the page as
# `[].concat(gd.layout.meta)[0]`.
META = "meta"
Json = dict[str, Any]

_FONT = '"Source Sans", sans-serif'  # Streamlit's body and heading font (genericFonts)
_SEQUENTIAL_LIGHT = ["#e4f5ff", "#c7ebff", "#a6dcff", "#83c9ff", "#60b4ff", "#3d9df3", "#1c83e1", "#0068c9", "#0054a3", "#004280"]  # fmt: skip
_LIGHT: Json = {
    "categorical": ["#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700", "#ffd16a", "#6d3fc0", "#d5dae5"],
    "sequential": _SEQUENTIAL_LIGHT,
    "increasing": "#29b09d", "decreasing": "#ff2b2b", "total": "#0068c9",
    "gray30": "#e6eaf1", "gray70": "#808495", "gray90": "#262730",
}  # fmt: skip
_DARK: Json = {
    "categorical": ["#83c9ff", "#0068c9", "#ffabab", "#ff2b2b", "#7defa1", "#29b09d", "#ffd16a", "#ff8700", "#6d3fc0", "#d5dae5"],
    "sequential": _SEQUENTIAL_LIGHT[::-1],
    "increasing": "#7defa1", "decreasing": "#ffabab", "total": "#83c9ff",
    "gray30": "#31333F", "gray70": "#e6eaf1", "gray90": "#fafafa",
}  # fmt: skip
_DIVERGING = ["#7d353b", "#bd4043", "#ff4b4b", "#ff8c8c", "#ffc7c7", "#a6dcff", "#60b4ff", "#1c83e1", "#0054a3", "#004280"]  # fmt: skip
_AXIS = re.compile(r"^([xy])axis(\d*)$")
_COLORAXIS = re.compile(r"^coloraxis\d*$")
# Trace types drawn on x/y axes (a template's xaxis/yaxis reaches the axes they create).
_CARTESIAN = frozenset({"scatter", "scattergl", "bar", "heatmap", "histogram", "histogram2d", "histogram2dcontour",
                        "box", "violin", "contour", "image", "waterfall", "funnel", "candlestick", "ohlc"})  # fmt: skip


def _scale(colours: list[str]) -> list[list[Any]]:
    return [[i / (len(colours) - 1), c] for i, c in enumerate(colours)]


def _axis(p: Json, x: bool) -> Json:
    g30, g70 = p["gray30"], p["gray70"]
    axis: Json = {
        "zerolinecolor": g30, "gridcolor": g30, "tickcolor": g30, "minor": {"gridcolor": g30},
        "tickfont": {"color": g70, "size": 12},
        "title": {"font": {"color": g70, "size": 14}, "standoff": 20 if x else 24},
        "automargin": True,
    }  # fmt: skip
    if x:
        axis |= {"showgrid": False, "zeroline": False,
                 "rangeselector": {"bgcolor": p["bg"], "bordercolor": g30, "borderwidth": 1, "x": 0}}  # fmt: skip
    else:
        axis["ticklabelposition"] = "outside"
    return axis


def _layout(p: Json) -> Json:
    """Streamlit's template layout (applyStreamlitThemeTemplateLayout) with its colours resolved."""
    g70, bg, sequential = p["gray70"], p["bg"], _scale(p["sequential"])
    small, label = {"color": g70, "size": 12}, {"color": g70, "size": 14}
    tern_axis = {"gridcolor": g70, "linecolor": g70, "tickfont": {"family": _FONT, "size": 12}}
    return {
        "colorway": list(p["categorical"]),
        "colorscale": {"sequential": sequential, "sequentialminus": sequential, "diverging": _scale(_DIVERGING)},
        "coloraxis": {"colorscale": sequential,
                      "colorbar": {"thickness": 16, "xpad": 24, "ticklabelposition": "outside",
                                   "outlinecolor": "rgba(0,0,0,0)", "outlinewidth": 8, "len": 0.75, "y": 0.5745,
                                   "title": {"font": label}, "tickfont": small}},
        "font": {"color": g70, "family": _FONT, "size": 12, "weight": 400},
        # Streamlit also wraps a title's text in <b>: the same as a bold title font.
        "title": {"font": {"family": _FONT, "size": 16, "color": p["heading"], "weight": 700},
                  "pad": {"l": 4}, "xanchor": "left", "x": 0},
        "legend": {"title": {"font": small, "side": "top"}, "valign": "top", "bordercolor": "rgba(0,0,0,0)",
                   "borderwidth": 0, "font": {"size": 12, "color": p["gray90"]}},
        "paper_bgcolor": bg, "plot_bgcolor": bg,
        "xaxis": _axis(p, x=True), "yaxis": _axis(p, x=False),
        "margin": {"pad": 8, "r": 0, "l": 0},
        "hoverlabel": {"bgcolor": bg, "bordercolor": p["border"],
                       "font": {"color": g70, "family": _FONT, "size": 12}},
        "ternary": {"bgcolor": bg, "aaxis": tern_axis, "baxis": tern_axis, "caxis": tern_axis},
    }  # fmt: skip


def _data(p: Json) -> Json:
    """Streamlit's template trace defaults (streamlit_plotly_theme.py), colours resolved."""
    sequential = _scale(p["sequential"])
    g70, up, down = p["gray70"], p["increasing"], p["decreasing"]
    table_line = {"color": p["faded05"]}
    return {
        "candlestick": [{"decreasing": {"line": {"color": down}}, "increasing": {"line": {"color": up}}}],
        **{kind: [{"colorscale": sequential}] for kind in ("contour", "contourcarpet", "heatmap", "histogram2d")},
        "icicle": [{"textfont": {"color": "white"}}],
        "sankey": [{"textfont": {"color": g70}}],
        "scatter": [{"marker": {"line": {"width": 0}}}],
        "table": [{"cells": {"fill": {"color": p["bg"]}, "font": {"color": p["gray90"]}, "line": table_line},
                   "header": {"fill": {"color": p["bg_mix"]}, "font": {"color": g70}, "line": table_line}}],
        "waterfall": [{"increasing": {"marker": {"color": up}}, "decreasing": {"marker": {"color": down}},
                       "totals": {"marker": {"color": p["total"]}},
                       "connector": {"line": {"color": g70, "width": 2}}}],
    }  # fmt: skip


@functools.cache
def palette(mode: Mode) -> Json:
    """The chart colours of `mode`, with the page's surface colours (background, heading,
    borders) of the installed Streamlit's frontend (streamlit_adapter.theme_surfaces)."""
    from .streamlit_adapter import theme_surfaces

    return {**(_LIGHT if mode == "light" else _DARK), **theme_surfaces()[mode]}


@functools.cache
def template_json(mode: Mode) -> Json:
    """The look as a template's plain dict {"layout": ..., "data": ...} (shared: do not edit)."""
    return {"layout": _layout(palette(mode)), "data": _data(palette(mode))}


@functools.cache
def template(mode: Mode) -> go.layout.Template:
    """The look as a validated plotly Template (shared: do not edit)."""
    return go.layout.Template(copy.deepcopy(template_json(mode)))


def _under(defaults: Json, own: Json) -> Json:
    """`own` with `defaults` filling what it leaves unset (nested dicts merged, `own` wins)."""
    out = copy.deepcopy(defaults)
    for key, value in own.items():
        base = out.get(key)
        out[key] = _under(base, value) if isinstance(base, dict) and isinstance(value, dict) else value
    return out


def _subplots(layout: Json, data: list[Json]) -> tuple[set[str], set[str]]:
    """The x/y axes and colour axes the figure draws: its layout's and those its traces use."""
    axes = {key for key in layout if _AXIS.match(key)}
    coloraxes = {key for key in layout if _COLORAXIS.match(key)}
    for trace in data:
        if trace.get("type", "scatter") in _CARTESIAN:
            for letter in "xy":
                axes.add(f"{letter}axis{str(trace.get(f'{letter}axis', letter))[1:]}")
        for owner in (trace, trace.get("marker") or {}):
            if isinstance(owner.get("coloraxis"), str):
                coloraxes.add(owner["coloraxis"])
    if not data:
        axes |= {"xaxis", "yaxis"}  # an empty figure still draws one pair of axes
    return axes, coloraxes


def themed_layout(layout: Json, data: list[Json], mode: Mode) -> Json:
    """`layout` with the look filled in where it sets nothing, as plotly.js applies a template."""
    look = template_json(mode)["layout"]
    axes, coloraxes = _subplots(layout, data)
    fixed = {k: v for k, v in look.items() if not (_AXIS.match(k) or k in ("coloraxis", "ternary"))}
    out = _under(fixed, layout)
    for name in axes:
        out[name] = _under(look[name[0] + "axis"], layout.get(name) or {})
    for name in coloraxes:
        out[name] = _under(look["coloraxis"], layout.get(name) or {})
    if "ternary" in layout:
        out["ternary"] = _under(look["ternary"], layout["ternary"])
    out.setdefault("datarevision", DATAREVISION)
    out.pop("template", None)
    if isinstance(out.get(META), dict):
        out[META] = [out[META]]
    return out


def plain_arrays(value: Any) -> Any:
    """`value` (a trace, or a part of one) with its one-dimensional typed arrays as lists: plotly.js
    decodes one to a new typed array at every `Plotly.react`, which counts as changed data even
    under an unchanged datarevision (a two-dimensional one decodes to a list of rows and is spared,
    so a heatmap's z stays compact)."""
    if not isinstance(value, dict):
        return value
    if isinstance(value.get("bdata"), str) and "dtype" in value and "," not in str(value.get("shape", "")):
        values = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if values.dtype == np.float32:  # each number's shortest decimals, not float64's 17 digits
            return [float(text) for text in values.astype(str).tolist()]
        return list(values.tolist())
    return {key: plain_arrays(item) for key, item in value.items()}


def selection_layout(selection: tuple[str, ...]) -> Json:
    """The click, hover and drag modes Streamlit's chart element sets once mounted on a chart
    that reports selections (`selection`: its selection modes; empty: it reports none). The
    element changes the layout only where these differ from the figure's, and a new `clickmode`
    costs plotly.js a full redraw, so the figure is sent with them (its own values win, as there)."""
    if not selection:
        return {}
    points = "points" in selection
    drag = "pan" if points else "select" if "box" in selection else "lasso" if "lasso" in selection else "pan"
    return {"clickmode": "event+select" if points else "none", "hovermode": "closest", "dragmode": drag}


def for_browser(fig: go.Figure, mode: Mode, selection: tuple[str, ...] = ()) -> go.Figure:
    """A new figure to send with `st.plotly_chart(..., theme=None)`: `fig` in the look of
    Streamlit's `mode` theme, with no template object and a datarevision, so Streamlit's second
    `Plotly.react` of it costs no redraw. `selection`: the chart's selection modes when it
    reports selections (`selection_layout`). `fig` (maybe cached, shared) is not touched."""
    spec = fig.to_dict()
    data = spec.get("data", [])
    layout = _under(selection_layout(selection), spec.get("layout", {}))
    defaults = template_json(mode)["data"]  # template.data: one entry a trace type
    traces = [plain_arrays(_under(defaults.get(trace.get("type", "scatter"), [{}])[0], trace)) for trace in data]
    out = figure(traces, themed_layout(layout, data, mode))
    out.layout.template = None  # serialised as null: plotly.js then has no template to compare
    if spec.get("frames"):  # an animation (the training page's snapshots) plays as it was
        out.frames = [go.Frame(frame, _validate=False) for frame in spec["frames"]]
    return out
