"""Figures of sparse attention patterns (attnviz/sparse.py, issue 22.3): the allowed entries of
each pattern as a square map, and the entries kept against n^2 as n grows. Data in, figure out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ._base import HEAD_COLORS, Json, escape, figure, layout_title
from .margins import wrapped

__all__ = ["pattern_growth", "pattern_maps"]

MAX_TICKS = 40  # token labels on a pattern's axes up to this many tokens
PANEL_TITLE_PX = 140  # a map's title, wrapped: half of a 390 px phone's plot area
FIGURE_TITLE_PX = 300  # the figure's title, wrapped: a 390 px phone's chart width less the room either side


def pattern_maps(
    masks: Mapping[str, np.ndarray], tokens: Sequence[str] | None = None, *, lang: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """One square map a pattern, two to a row: dark where query i (row) may look at key j. Two
    to a row, not four, so each map's title has the half of a 390 px phone's width to itself
    (four side by side ran together); titles wrapped to that width, token labels on the outer
    axes only (the bottom row's x, the left column's y)."""
    names = list(masks)
    if not names:
        raise ValueError("no pattern to draw")
    n = masks[names[0]].shape[0]
    cols = min(2, len(names))
    rows = -(-len(names) // cols)
    gap_x, gap_y = 0.1, 0.16 / rows  # the gap between two rows holds the lower map's title
    width, height = (1 - gap_x * (cols - 1)) / cols, (1 - gap_y * (rows - 1)) / rows
    labels = [escape(tok) for tok in tokens] if tokens is not None and len(tokens) == n <= MAX_TICKS else None
    data: list[Json] = []
    title_lines = 3  # a wrapped kind (up to two lines) and the count
    layout: Json = {"height": 120 + 300 * rows, "margin": {"t": 70 + 14 * title_lines, "b": 60}, "annotations": []}
    for k, name in enumerate(names):
        suffix = "" if k == 0 else str(k + 1)
        row, col = divmod(k, cols)
        mask = np.asarray(masks[name], dtype=bool)
        x0, top = col * (width + gap_x), 1 - row * (height + gap_y)
        kept = int(mask.sum())
        data.append({"type": "heatmap", "z": mask.astype(np.int8), "xaxis": f"x{suffix}", "yaxis": f"y{suffix}",
                     "zmin": 0, "zmax": 1, "showscale": False, "colorscale": [[0, "rgba(0,0,0,0)"], [1, HEAD_COLORS[0]]],
                     "hovertemplate": t("sparse_fig.hover", lang, q="%{y}", k="%{x}") + "<extra></extra>"})  # fmt: skip
        shown = labels is not None
        axis: Json = {"tickfont": {"size": 9}}
        if labels is not None:
            axis |= {"tickmode": "array", "tickvals": list(range(n)), "ticktext": labels}
        layout[f"xaxis{suffix}"] = axis | {"domain": [round(x0, 6), round(min(x0 + width, 1.0), 6)],
                                           "anchor": f"y{suffix}", "constrain": "domain", "tickangle": -90,
                                           "showticklabels": shown and k + cols >= len(names)}  # fmt: skip
        layout[f"yaxis{suffix}"] = axis | {"domain": [round(max(top - height, 0.0), 6), round(top, 6)],
                                           "anchor": f"x{suffix}", "autorange": "reversed", "scaleanchor": f"x{suffix}",
                                           "constrain": "domain", "showticklabels": shown and col == 0}  # fmt: skip
        kind = wrapped(t(f"trainlab.sparse.{name}", lang), PANEL_TITLE_PX, 11)
        text = t(
            "sparse_fig.panel", lang, kind=kind, kept=f"{kept:,}", total=f"{n * n:,}", share=f"{kept / (n * n):.0%}"
        )
        layout["annotations"].append({"text": text, "xref": "paper", "yref": "paper", "x": x0 + width / 2, "y": top,
                                      "yanchor": "bottom", "showarrow": False, "font": {"size": 11}})  # fmt: skip
    title = wrapped(t("sparse_fig.maps_title", lang, n=n), FIGURE_TITLE_PX, 17)
    layout["title"] = layout_title(title, wrapped(t("sparse_fig.maps_note", lang), FIGURE_TITLE_PX, 12))
    return figure(data, layout)


def pattern_growth(
    sizes: Sequence[int], counts: Mapping[str, Sequence[int]], *, lang: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """Entries kept by each pattern against n^2 (full attention), log-log: the lines of the
    patterns rise like n, full attention like n^2."""
    x = np.asarray(sizes, dtype=np.int64)
    data: list[Json] = [{"type": "scatter", "mode": "lines+markers", "x": x, "y": x * x, "name": t("sparse_fig.full", lang),
                         "line": {"color": "#888888", "dash": "dash"}}]  # fmt: skip
    for k, (name, values) in enumerate(counts.items()):
        data.append({"type": "scatter", "mode": "lines+markers", "x": x, "y": np.asarray(values, dtype=np.int64),
                     "name": t(f"trainlab.sparse.{name}", lang), "line": {"color": HEAD_COLORS[k % len(HEAD_COLORS)]}})  # fmt: skip
    layout: Json = {
        "title": layout_title(t("sparse_fig.growth_title", lang)),
        "height": 380,
        "xaxis": {"type": "log", "title": {"text": t("sparse_fig.tokens", lang)}},
        "yaxis": {"type": "log", "title": {"text": t("sparse_fig.entries", lang)}},
        "legend": {"orientation": "h", "y": -0.25},
    }
    return figure(data, layout)
