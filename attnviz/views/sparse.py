"""Figures of sparse attention patterns (attnviz/sparse.py, issue 22.3): the allowed entries of
each pattern as a square map, and the entries kept against n^2 as n grows. Data in, figure out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ._base import HEAD_COLORS, Json, escape, figure, layout_title

__all__ = ["pattern_growth", "pattern_maps"]

MAX_TICKS = 40  # token labels on a pattern's axes up to this many tokens


def pattern_maps(
    masks: Mapping[str, np.ndarray], tokens: Sequence[str] | None = None, *, lang: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """One square map a pattern, side by side: dark where query i (row) may look at key j."""
    names = list(masks)
    if not names:
        raise ValueError("no pattern to draw")
    n = masks[names[0]].shape[0]
    gap = 0.05
    width = (1 - gap * (len(names) - 1)) / len(names)
    labels = [escape(tok) for tok in tokens] if tokens is not None and len(tokens) == n <= MAX_TICKS else None
    data: list[Json] = []
    layout: Json = {"height": 380, "margin": {"t": 90, "b": 60}, "annotations": []}
    for k, name in enumerate(names):
        suffix = "" if k == 0 else str(k + 1)
        mask = np.asarray(masks[name], dtype=bool)
        x0 = k * (width + gap)
        kept = int(mask.sum())
        data.append({"type": "heatmap", "z": mask.astype(np.int8), "xaxis": f"x{suffix}", "yaxis": f"y{suffix}",
                     "zmin": 0, "zmax": 1, "showscale": False, "colorscale": [[0, "rgba(0,0,0,0)"], [1, HEAD_COLORS[0]]],
                     "hovertemplate": t("sparse_fig.hover", lang, q="%{y}", k="%{x}") + "<extra></extra>"})  # fmt: skip
        axis: Json = {"showticklabels": labels is not None and n <= MAX_TICKS, "tickfont": {"size": 9}}
        if labels is not None:
            axis |= {"tickmode": "array", "tickvals": list(range(n)), "ticktext": labels}
        layout[f"xaxis{suffix}"] = axis | {"domain": [round(x0, 6), round(min(x0 + width, 1.0), 6)],
                                           "anchor": f"y{suffix}", "constrain": "domain", "tickangle": -90}  # fmt: skip
        layout[f"yaxis{suffix}"] = axis | {"anchor": f"x{suffix}", "autorange": "reversed", "scaleanchor": f"x{suffix}",
                                           "constrain": "domain", "showticklabels": k == 0 and axis["showticklabels"]}  # fmt: skip
        layout["annotations"].append({"text": t("sparse_fig.panel", lang, kind=t(f"trainlab.sparse.{name}", lang),
                                      kept=f"{kept:,}", total=f"{n * n:,}", share=f"{kept / (n * n):.0%}"),
                                      "xref": "paper", "yref": "paper", "x": x0 + width / 2, "y": 1.0,
                                      "yanchor": "bottom", "showarrow": False, "font": {"size": 11}})  # fmt: skip
    layout["title"] = layout_title(t("sparse_fig.maps_title", lang, n=n), t("sparse_fig.maps_note", lang))
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
