"""Figures as the browser draws them cheaply: plotly.js draws every unbroken run of a line trace
as an SVG <path> of its own (the head view at 512 tokens: about 4,000 DOM nodes), while a layout
shape of type "path" draws the same segments as one element, with the trace's colour, width,
opacity, legend name and group. Only lines with nothing to hover become shapes.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..views._base import figure


def _array(value: Any) -> np.ndarray:
    """A trace's coordinates: a list, a numpy array, or plotly's base64 typed array."""
    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
    return np.asarray([np.nan if v is None else v for v in value], dtype=np.float64)


def _numbers(values: np.ndarray) -> list[str]:
    """Each value as its shortest exact decimal (a float32 as float32: 0.3, not 0.30000001)."""
    if values.dtype.kind not in "iub" and values.dtype != np.float32:
        values = values.astype(np.float64)
    return [s.removesuffix(".0") for s in values.astype(str).tolist()]


def path_of(xs: np.ndarray, ys: np.ndarray) -> str:
    """An SVG path in data coordinates: one subpath ("M x,y L x,y ...") per NaN-free run."""
    ok = ~(np.isnan(xs.astype(np.float64)) | np.isnan(ys.astype(np.float64)))
    pen_down = np.concatenate(([False], ok[:-1]))  # the point before was drawn: a line to this one
    points = zip(_numbers(xs), _numbers(ys), ok, pen_down, strict=True)
    return "".join(f"{'L' if down else 'M'}{x},{y}" for x, y, drawn, down in points if drawn)


def _is_plain_lines(trace: dict[str, Any]) -> bool:
    return (
        trace.get("type", "scatter") == "scatter"
        and trace.get("mode") == "lines"
        and trace.get("hoverinfo") == "skip"
        and not trace.get("fill")
        and trace.get("visible", True) is True
    )


def _shape(trace: dict[str, Any]) -> dict[str, Any]:
    shape: dict[str, Any] = {
        "type": "path",
        "path": path_of(_array(trace["x"]), _array(trace["y"])),
        "xref": trace.get("xaxis", "x"),
        "yref": trace.get("yaxis", "y"),
        "layer": "below",
        "line": trace.get("line", {}),
        "opacity": trace.get("opacity", 1.0),
        "showlegend": trace.get("showlegend", True),
    }
    return shape | {k: trace[k] for k in ("name", "legendgroup") if k in trace}


def lines_as_shapes(fig: go.Figure) -> go.Figure:
    """The same figure with its hover-less line traces drawn as path shapes (a new Figure;
    `fig` is left as it is, for its downloads); `fig` itself when it has none."""
    if not any(tr.type == "scatter" and tr.mode == "lines" and tr.hoverinfo == "skip" for tr in fig.data):
        return fig  # a heatmap: no copy of its arrays
    spec = fig.to_plotly_json()
    lines = [tr for tr in spec["data"] if _is_plain_lines(tr)]
    if not lines:
        return fig
    data = [tr for tr in spec["data"] if not _is_plain_lines(tr)]
    layout = dict(spec["layout"])
    layout["shapes"] = [*layout.get("shapes", ()), *(_shape(tr) for tr in lines)]
    return figure(data, layout)
