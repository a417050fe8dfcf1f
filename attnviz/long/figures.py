"""Figures of the long mode (plotly, no Streamlit): the overview of a head, a tile at full
resolution, one token's row, the weight each token receives, and every head's mean weight
against distance. Tokens are a visitor's text: escaped for Plotly's markup."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..i18n import t
from ..views._base import escape
from .attention import LongAttention, block_edges, pair_counts


def percent(fraction: float) -> str:
    """`fraction` as a percentage, two significant digits below 10 %, so a share that is not zero
    never reads as 0 %."""
    value = 100.0 * float(fraction)
    if not np.isfinite(value) or value == 0.0:
        return f"{value:.0f}%"
    digits = 0 if abs(value) >= 10 else 1 - int(np.floor(np.log10(abs(value))))
    return f"{value:,.{digits}f}%"


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "margin": {"l": 60, "r": 20, "t": 50, "b": 50}, **extra}


def overview_figure(overview: np.ndarray, n: int, size: int, title: str, lang: str) -> go.Figure:
    """The block means as a heatmap whose axes are token positions (each cell starts at its
    block's first token, so a click names the tile to open). Colours saturate at the 99.5th
    percentile: the diagonal would otherwise hide everything else."""
    starts = block_edges(n, size)[:-1]
    top = float(np.quantile(overview, 0.995)) or float(overview.max()) or 1.0
    trace = go.Heatmap(
        z=overview,
        x=starts,
        y=starts,
        zmin=0.0,
        zmax=top,
        colorscale="Blues",
        hovertemplate=t("long.fig_overview_hover", lang) + "<extra></extra>",
        colorbar={"title": {"text": t("long.fig_mean", lang)}},
    )
    # heatmaps are not selectable in plotly.js: a near-invisible marker on each cell takes the
    # click (as views/pick.py does for the all-heads grid); x and y are plain lists of ints
    cols, rows = np.meshgrid(starts, starts)
    picks = go.Scatter(
        x=cols.ravel().tolist(),
        y=rows.ravel().tolist(),
        mode="markers",
        marker={"size": 6, "symbol": "square", "opacity": 0.01, "color": "gray"},
        hoverinfo="none",
        showlegend=False,
    )
    layout = _layout(
        title,
        height=560,
        hovermode="closest",
        hoverdistance=-1,
        clickmode="event+select",
        xaxis={"title": {"text": t("long.fig_key_pos", lang)}, "constrain": "domain"},
        yaxis={"title": {"text": t("long.fig_query_pos", lang)}, "autorange": "reversed", "scaleanchor": "x"},
    )
    return go.Figure([trace, picks], layout)


def tile_figure(tile: np.ndarray, long: LongAttention, rows: range, cols: range, title: str, lang: str) -> go.Figure:
    """One block of the map at full resolution, labelled by its tokens."""
    trace = go.Heatmap(
        z=tile,
        x=[f"{escape(long.tokens[j])} ({j})" for j in cols],
        y=[f"{escape(long.tokens[i])} ({i})" for i in rows],
        zmin=0.0,
        colorscale="Blues",
        hovertemplate=t("long.fig_tile_hover", lang) + "<extra></extra>",
        colorbar={"title": {"text": t("long.fig_weight", lang)}},
    )
    layout = _layout(
        title,
        height=620,
        xaxis={"type": "category", "tickangle": -60, "tickfont": {"size": 9}},
        yaxis={"type": "category", "autorange": "reversed", "tickfont": {"size": 9}},
    )
    return go.Figure(trace, layout)


def positions_figure(values: np.ndarray, long: LongAttention, title: str, y_key: str, lang: str) -> go.Figure:
    """`values` (n,) over the key positions: a query's row (y_key "long.fig_weight") or what each
    position receives (y_key "long.fig_received")."""
    trace = go.Scattergl(
        x=np.arange(long.n),
        y=values,
        mode="lines",
        text=[escape(tok) for tok in long.tokens],
        hovertemplate=t("long.fig_position_hover", lang) + "<extra></extra>",
    )
    axes = {"xaxis": {"title": {"text": t("long.fig_key_pos", lang)}}, "yaxis": {"title": {"text": t(y_key, lang)}}}
    return go.Figure(trace, _layout(title, height=320, **axes))


def distance_bins(profile: np.ndarray, causal: bool, bins: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """(bin centres, mean weight per pair) over geometric distance bins, distance 0 on its own:
    the mean of a bin counts every pair in it (a far distance has fewer pairs)."""
    n = len(profile)
    pairs = pair_counts(n, causal)
    edges = np.unique(np.r_[0, 1, np.geomspace(1, n, bins).round().astype(np.int64), n])
    sums = np.add.reduceat(profile * pairs, edges[:-1])
    counts = np.add.reduceat(pairs, edges[:-1])
    centres = np.sqrt(np.maximum(edges[:-1], 0.5) * np.maximum(edges[1:] - 1, 0.5))
    return centres, sums / counts


def distance_figure(profiles: list[np.ndarray], causal: bool, title: str, lang: str) -> go.Figure:
    """Each head's mean weight against distance (log-log): local heads fall fast, long-range
    heads stay up."""
    bins = enumerate(distance_bins(profile, causal) for profile in profiles)
    traces = [go.Scatter(x=x, y=y, mode="lines", name=t("long.fig_head", lang, head=head)) for head, (x, y) in bins]
    layout = _layout(
        title,
        height=420,
        xaxis={"title": {"text": t("long.fig_distance", lang)}, "type": "log"},
        yaxis={"title": {"text": t("long.fig_mean", lang)}, "type": "log"},
    )
    return go.Figure(traces, layout)
