"""Views of a whole corpus: a per-head statistic with its spread (`corpus_grid`) and the query-key
atlas of one head (`query_key_atlas`, after AttentionViz), drawn with WebGL so tens of thousands
of points stay fluid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ._base import SEQUENTIAL, Json, colour, escape, figure, head_label, layout_title, one_line
from .grid import numbers_grid
from .pick import token_pick

ATLAS_SNIPPET = 60  # characters of a point's sentence in its hover box
QUERY_COLOR = "#636EFA"
KEY_COLOR = "#EF553B"


def corpus_grid(
    mean: np.ndarray,
    std: np.ndarray,
    *,
    minimum: np.ndarray | None = None,
    maximum: np.ndarray | None = None,
    count: int | None = None,
    title: str | None = None,
    zmin: float | None = None,
    zmax: float | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """(layers, heads) means over a corpus as a heatmap, each cell with "mean ± std", and in
    its hover box the minimum, maximum and number of sentences when given."""
    z = np.array(mean, dtype=np.float64)
    spread = np.array(std, dtype=np.float64)
    if z.ndim != 2 or spread.shape != z.shape:
        raise ValueError(f"mean and std must both have shape (layers, heads), got {z.shape} and {spread.shape}")
    n_layers, n_heads = z.shape
    low = np.full_like(z, np.nan) if minimum is None else np.asarray(minimum, dtype=np.float64)
    high = np.full_like(z, np.nan) if maximum is None else np.asarray(maximum, dtype=np.float64)
    text = [[f"{z[i, j]:.2f}<br>±{spread[i, j]:.2f}" for j in range(n_heads)] for i in range(n_layers)]
    cells = {
        "text": text,
        "texttemplate": "%{text}",
        "textfont": {"size": 10},
        "colorbar": {"title": {"text": t("fig.corpus_mean", lang)}},
    }
    hover = [
        t(
            "fig.hover_corpus_cell",
            lang,
            head=head_label(layer, head, lang=lang),
            mean=f"{z[layer, head]:.3f}",
            std=f"{spread[layer, head]:.3f}",
            low=f"{low[layer, head]:.3f}",
            high=f"{high[layer, head]:.3f}",
            n="?" if count is None else f"{count:,}",
        )
        for layer, head in np.ndindex(z.shape)
    ]
    layout = {"title": layout_title(title or "", t("fig.note_click_head", lang)), "height": 140 + 48 * n_layers}
    return numbers_grid(z, cells | colour(z, zmin, zmax), hover, layout, lang)


def query_key_atlas(
    xy: np.ndarray,
    is_key: np.ndarray,
    row: np.ndarray,
    relative: np.ndarray,
    tokens: Sequence[str],
    texts: Sequence[str],
    *,
    layer: int,
    head: int,
    method: str = "pca",
    colour_by: str = "kind",
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Queries and keys of one head in 2D: points (2m, 2) with the m queries first, the key
    of the same token at the same index + m. `colour_by` "kind" (query or key) or "position"
    (relative position in the sentence; queries as circles, keys as diamonds). Each point's
    customdata is [row] (which of `texts` it comes from): `atlas_pick` reads a click back."""
    if colour_by not in ("kind", "position"):
        raise ValueError("colour_by must be 'kind' or 'position'")
    points = np.asarray(xy, dtype=np.float32)
    m = len(tokens)
    if points.shape != (2 * m, 2) or len(is_key) != 2 * m or len(row) != 2 * m:
        raise ValueError(f"{len(points)} points for {m} tokens: expected the queries and then the keys")
    shown = [escape(tok) for tok in tokens]
    snippets = [escape(one_line(text, ATLAS_SNIPPET)) for text in texts]
    sides = np.asarray(is_key, dtype=bool)
    rows = np.asarray(row)
    data = []
    for key_side in (False, True):
        idx = np.flatnonzero(sides == key_side)
        trace = _atlas_trace(key_side, colour_by, np.asarray(relative, dtype=np.float32)[idx], lang)
        data.append(
            trace
            | {
                "x": points[idx, 0],
                "y": points[idx, 1],
                "customdata": [[int(r)] for r in rows[idx]],  # plain lists: clicks read them
                "text": [shown[i % m] for i in idx],
                "hovertext": [snippets[int(r)] for r in rows[idx]],
            }
        )
    title = t("fig.atlas_title", lang, head=head_label(layer, head, lang=lang), method=t(f"fig.method_{method}", lang))
    note = t("fig.atlas_note", lang, tokens=f"{m:,}", sentences=f"{len(texts):,}")
    layout: Json = {
        "title": layout_title(title, note),
        "height": 620,
        "hovermode": "closest",
        "clickmode": "event+select",
        "legend": {"orientation": "h", "y": -0.08},
        "xaxis": {"title": {"text": t("fig.atlas_x", lang)}, "zeroline": False},
        "yaxis": {"title": {"text": t("fig.atlas_y", lang)}, "zeroline": False, "scaleanchor": "x"},
    }
    return figure(data, layout)


def _atlas_trace(key_side: bool, colour_by: str, relative: np.ndarray, lang: str) -> Json:
    """Everything of the query or the key trace but its points."""
    marker: dict[str, Any] = {"size": 5, "opacity": 0.75, "symbol": "diamond" if key_side else "circle"}
    if colour_by == "kind":
        marker["color"] = KEY_COLOR if key_side else QUERY_COLOR
    else:
        marker |= {
            "color": relative,
            "colorscale": SEQUENTIAL,
            "cmin": 0.0,
            "cmax": 1.0,
            "showscale": not key_side,
            "colorbar": {"title": {"text": t("fig.relative_position", lang)}},
        }
    return {
        "type": "scattergl",
        "mode": "markers",
        "name": t("fig.keys" if key_side else "fig.queries", lang),
        "marker": marker,
        "hovertemplate": t("fig.hover_atlas", lang, token="%{text}", sentence="%{hovertext}")
        + "<extra>%{fullData.name}</extra>",
    }


# The row (index into the atlas's texts) of the first selected point, else None: an atlas point
# carries [row] as a token marker carries [i], and is read back the same way.
atlas_pick = token_pick
