"""What every view shares: the figure constructor, token axes and escaping, colours, titles, the
head label, and NaN-broken polylines. Every word a view puts on a figure comes from
`attnviz.i18n.t(key, lang)`; hovertemplates are catalogue sentences whose {placeholders} receive
Plotly's %{...} fields, so word order stays the translator's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale

from ..i18n import DEFAULT_LANGUAGE, t

Json = dict[str, Any]  # a plain Plotly trace or layout dict

MAX_TICK_LABELS = 80  # beyond this many tokens, axes label every k-th token only

# Colour scales as explicit [position, colour] lists, as plotly's validators would store them:
# plotly.js knows "Viridis" by name but not plotly.py's reversed "_r" scales, and `figure`
# passes values through unvalidated.
SEQUENTIAL = get_colorscale("Viridis")  # perceptually uniform, readable on light and dark backgrounds
DIVERGING = get_colorscale("RdBu_r")
HEAD_COLORS = ("#636EFA", "#EF553B", "#00CC96", "#AB63FA", "#FFA15A", "#19D3F3", "#FF6692", "#B6E880", "#FF97FF", "#FECB52", "#8C564B", "#BCBD22")  # fmt: skip
EDGE_COLOR = "#636EFA"
NODE_COLOR = "#636EFA"
SPECIAL_COLOR = "#FFA15A"
FOCUS_COLOR = "#EF553B"


def figure(data: list[Json], layout: Json) -> go.Figure:
    """The Figure of plain trace and layout dicts, stored unvalidated (validating is the views'
    largest cost; plotly.io loads its templates so); validation is back on for the caller's later
    edits. The tests keep our dicts valid: every view's JSON loads unchanged into a validating Figure."""
    fig = go.Figure({"data": data, "layout": layout}, _validate=False)
    fig._validate = fig.layout._validate = True
    for trace in fig.data:
        trace._validate = True
    return fig


def head_label(layer: int, head: int, *, lang: str = DEFAULT_LANGUAGE) -> str:
    """The label every view uses for one head: 0-indexed, like the widgets."""
    return t("fig.layer_head", lang, layer=layer, head=head)


def which_head(head: int | None, n_heads: int, lang: str) -> str:
    """Which head a title is about: "head 3", or "mean of 12 heads" for head=None."""
    return t("fig.mean_of_heads", lang, heads=n_heads) if head is None else t("fig.head_n", lang, h=head)


def layout_title(text: str, note: str | None = None) -> Json:
    """A figure title, with an optional note in small print under it."""
    return {"text": text if note is None else f"{text}<br><sup>{note}</sup>"}


def token_map_trace(z: np.ndarray, keys: list[str], colorbar_title: str, hovertemplate: str) -> Json:
    """A heatmap trace of an n x n token map (rows: the token that receives, columns: the source),
    its colour bar under the map (`colorbar_under`)."""
    return {
        "type": "heatmap",
        "z": z,
        "x": keys,
        "y": keys,
        "colorscale": SEQUENTIAL,
        "colorbar": colorbar_under(colorbar_title),
        "hovertemplate": hovertemplate + "<extra></extra>",
    }


BAR_ROOM_PX = 56  # under a square map's x axis: a lying colour bar (10 px), its numbers and air
# The lying colour bar's length with its title, which plotly.js draws left of it within `len`
# ("weight" leaves the bar 150 px, "mean weight" 114): within a phone's chart, the same in every language.
BAR_LEN_PX = 220


def colorbar_under(title: str) -> Json:
    """A colour bar lying centred along the figure's bottom edge: a square map is centred at a width
    the server does not know, so a bar standing beside it can end up far from it. The figure keeps
    `BAR_ROOM_PX` for it in its bottom margin (`margins.fit_margins(below=...)`)."""
    return {
        "title": {"text": title, "side": "right"},  # plotly.js drew a "top" title over a lying bar
        "orientation": "h",
        "lenmode": "pixels",
        "len": BAR_LEN_PX,
        "thickness": 10,
        "x": 0.5,
        "xanchor": "center",
        "yref": "container",
        "y": 0,
        "yanchor": "bottom",
        "ypad": 8,
    }


def panel_title(text: str, x: float, y: float = 1.0) -> Json:
    """A subplot's title standing on `y`, centred at `x` (both in paper coordinates)."""
    return {"text": text, "x": x, "xref": "paper", "y": y, "yref": "paper", "xanchor": "center", "yanchor": "bottom",
            "showarrow": False}  # fmt: skip


def subplot(layout: Json, k: int, xaxis: Json, yaxis: Json, *, square: bool = False) -> Json:
    """Puts subplot k's axes (k = 0 the first), each anchored on the other, into `layout`, square
    cells with `square`; returns what a trace drawn in it carries: {"xaxis": "x2", "yaxis": "y2"}
    for k = 1."""
    s = "" if k == 0 else str(k + 1)
    layout[f"xaxis{s}"] = xaxis | {"anchor": f"y{s}"}
    layout[f"yaxis{s}"] = yaxis | {"anchor": f"x{s}"} | ({"scaleanchor": f"x{s}"} if square else {})
    return {"xaxis": f"x{s}", "yaxis": f"y{s}"}


def map_height(n: int) -> int:
    """A token map's height in px for n tokens (Plotly's and the explorer's canvas)."""
    return int(np.clip(260 + 16 * n, 460, 860))


def one_line(text: object, most: int) -> str:
    """`text` on one line (white space collapsed), cut to `most` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= most else flat[: most - 1] + "…"


def escape(token: str) -> str:
    """A token as Plotly text: Plotly reads "<s>" as markup, and tokens are whatever a visitor typed."""
    return token.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def tick_step(n: int, max_labels: int = MAX_TICK_LABELS) -> int:
    return 1 if n <= max_labels else math.ceil(n / (max_labels // 2))


def token_axis(tokens: Sequence[str]) -> tuple[list[str], Json]:
    """Unique category keys "token (i)" for a token axis (Plotly merges equal categories), and the
    axis settings that label it with the bare tokens, every k-th beyond MAX_TICK_LABELS; escaped."""
    shown = [escape(tok) for tok in tokens]
    keys = [f"{s} ({i})" for i, s in enumerate(shown)]
    step = tick_step(len(keys))
    axis = {
        "type": "category",
        "categoryorder": "array",
        "categoryarray": keys,
        "tickmode": "array",
        "tickvals": keys[::step],
        "ticktext": shown[::step],
        "showgrid": False,
    }
    return keys, axis


def colour(values: np.ndarray, zmin: float | None, zmax: float | None) -> Json:
    """Sequential scale for non-negative data, diverging around 0 otherwise; the range follows the
    data unless zmin and zmax are both given (Plotly ignores a lone bound)."""
    finite = values[np.isfinite(values)]
    scale: Json = {"colorscale": SEQUENTIAL}
    if finite.size and finite.min() < 0:
        scale = {"colorscale": DIVERGING, "zmid": 0.0}
    return scale | {k: v for k, v in (("zmin", zmin), ("zmax", zmax)) if v is not None}


# ---------------------------------------------------------------------------------------------
# Lines: many straight segments or small rings as one trace


def polylines(xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(m, k) point rows -> one float32 polyline each for x and y, the rows broken apart by NaN (as
    None breaks a list), so one trace draws them all; arrays serialise far faster than long lists."""
    gap = np.full((len(xs), 1), np.nan)
    return np.hstack([xs, gap]).astype(np.float32).ravel(), np.hstack([ys, gap]).astype(np.float32).ravel()


def level(weights: np.ndarray, levels: Sequence[tuple[float, float]]) -> np.ndarray:
    """Index of the highest level whose lower bound each weight reaches."""
    return np.searchsorted([lo for lo, _ in levels], weights, side="right") - 1
