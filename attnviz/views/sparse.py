"""Figures of sparse attention patterns (attnviz/lab/sparse.py): the allowed entries of
each pattern as a square map, and the entries kept against n^2 as n grows. Data in, figure out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ._base import HEAD_COLORS, Json, escape, figure, layout_title, panel_title, subplot
from .margins import PANEL_LINE_PX, PANEL_TITLE_PX, top_title, wrapped

MAX_TICKS = 40  # token labels on a pattern's axes up to this many tokens
FIGURE_TITLE_PX = 300  # the figure's title, wrapped: a 390 px phone's chart width less the room either side
MAP_PX = 300  # a row of maps' height


def pattern_maps(
    masks: Mapping[str, np.ndarray], tokens: Sequence[str] | None = None, *, lang: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """One square map a pattern, two to a row (a title each on half a phone's width): dark where
    query i (row) may look at key j; token labels on the outer axes only."""
    names = list(masks)
    if not names:
        raise ValueError("no pattern to draw")
    n = masks[names[0]].shape[0]
    cols = min(2, len(names))
    rows = -(-len(names) // cols)
    panels = []  # each map's title: the pattern's name, wrapped, and its count of kept entries
    for name in names:
        total, kept = masks[name].shape[0] ** 2, int(np.count_nonzero(masks[name]))
        kind = wrapped(t(f"trainlab.sparse.{name}", lang), PANEL_TITLE_PX, 11)
        text = t("sparse_fig.panel", lang, kind=kind, kept=f"{kept:,}", total=f"{total:,}", share=f"{kept / total:.0%}")
        panels.append(wrapped(text, PANEL_TITLE_PX, 11))
    lines = [max(text.count("<br>") + 1 for text in panels[r * cols : (r + 1) * cols]) for r in range(rows)]
    gap_px = PANEL_LINE_PX * max(lines[1:], default=0) + 10  # between two rows: the lower maps' titles
    plot_px = MAP_PX * rows + gap_px * (rows - 1)
    gap_x, gap_y = 0.1, gap_px / plot_px
    width, height = (1 - gap_x * (cols - 1)) / cols, MAP_PX / plot_px
    labels = [escape(tok) for tok in tokens] if tokens is not None and len(tokens) == n <= MAX_TICKS else None
    data: list[Json] = []
    title, title_px = top_title(
        t("sparse_fig.maps_title", lang, n=n), t("sparse_fig.maps_note", lang), max_px=FIGURE_TITLE_PX
    )
    top = title_px + PANEL_LINE_PX * lines[0]
    layout: Json = {"height": top + 60 + plot_px, "margin": {"t": top, "b": 60}, "annotations": [], "title": title}
    axis: Json = {"tickfont": {"size": 9}, "constrain": "domain"}
    if labels is not None:
        axis |= {"tickmode": "array", "tickvals": list(range(n)), "ticktext": labels}
    for k, name in enumerate(names):
        row, col = divmod(k, cols)
        x0, row_top = col * (width + gap_x), 1 - row * (height + gap_y)
        x_axis = axis | {"domain": [round(x0, 6), round(min(x0 + width, 1.0), 6)], "tickangle": -90,
                         "showticklabels": labels is not None and k + cols >= len(names)}  # fmt: skip
        y_axis = axis | {"domain": [round(max(row_top - height, 0.0), 6), round(row_top, 6)], "autorange": "reversed",
                         "showticklabels": labels is not None and col == 0}  # fmt: skip
        data.append({"type": "heatmap", "z": np.asarray(masks[name], dtype=bool).astype(np.int8), "zmin": 0, "zmax": 1,
                     "showscale": False, "colorscale": [[0, "rgba(0,0,0,0)"], [1, HEAD_COLORS[0]]],
                     "hovertemplate": t("sparse_fig.hover", lang, q="%{y}", k="%{x}") + "<extra></extra>"}
                    | subplot(layout, k, x_axis, y_axis, square=True))  # fmt: skip
        layout["annotations"].append(panel_title(panels[k], x0 + width / 2, row_top) | {"font": {"size": 11}})
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
        # inside the plot's top left, which the rising lines leave empty: under it, a phone's five
        # stacked entries ran over the x axis's title
        "legend": {"x": 0.01, "y": 0.99, "xanchor": "left", "yanchor": "top", "bgcolor": "rgba(128,128,128,0.08)"},
    }
    return figure(data, layout)
