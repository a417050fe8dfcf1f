"""Token-by-token maps: one head's attention (`heatmap`) and a small labelled matrix with its
numbers in the cells (`matrix`, the lab's Q, K, QK^T, softmax steps)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ..result import Attention
from ._base import BAR_ROOM_PX, Json, colour, figure, layout_title, token_axis, token_map_trace
from .margins import fit_margins, square_map_layout, stand_upright
from .spec import HeatmapSpec, heatmap_spec

MASKED_BELOW = -1e4  # matrix: scores at or below this were masked (HF used -10000, others -1e9 or -inf)


def heatmap(
    att: Attention,
    layer: int = 0,
    head: int | None = 0,
    *,
    zmax: float | None = None,
    title: str | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """One head's map at full resolution (`spec.heatmap_spec` says what each argument does): query
    tokens down the side (row 0 at the top), key tokens across, cells square even when n_q != n_k."""
    return heatmap_figure(heatmap_spec(att, layer, head, zmax=zmax, title=title, lang=lang))


def heatmap_figure(spec: HeatmapSpec) -> go.Figure:
    """The Plotly figure of a map's specification (the HTML download of the explorer's canvas)."""
    rows, axis = token_axis(spec.rows)
    hover = spec.hover.replace("{q}", "%{y}").replace("{k}", "%{x}").replace("{w}", "%{z:.6f}")
    trace = token_map_trace(spec.z, rows, spec.bar, hover) | {"zauto": spec.zmax is None}
    if spec.zmax is not None:
        trace |= {"zmin": spec.zmin, "zmax": spec.zmax}
    layout = square_map_layout(spec.title, spec.note, max(spec.z.shape), axis, spec.xtitle, spec.ytitle)
    if spec.cols != spec.rows:  # cross-attention: queries from one text down the side, keys from the other across
        cols, col_axis = token_axis(spec.cols)
        trace["x"] = cols
        layout["xaxis"] = col_axis | {"title": {"text": spec.xtitle}, "constrain": "domain"}
    return figure([trace], fit_margins(layout, below=BAR_ROOM_PX))


def matrix(
    values: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    title: str | None = None,
    fmt: str = ".2f",
    *,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """A small labelled matrix with its numbers in the cells (Q, K, QK^T, scaled, softmax, ...).

    Masked cells (-inf, or at or below MASKED_BELOW such as -1e9) show "-inf" ("−∞" in Chinese)
    on the page background instead of a colour that would swamp the scale. Labels are escaped.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 1:
        v = v[None, :]
    if v.shape != (len(row_labels), len(col_labels)):
        raise ValueError(f"values have shape {v.shape}, labels give ({len(row_labels)}, {len(col_labels)})")
    masked = (v <= MASKED_BELOW) | (np.isinf(v) & (v < 0))
    z = np.where(masked, np.nan, v)
    rows, row_axis = token_axis(row_labels)
    cols, col_axis = token_axis(col_labels)
    data: list[Json] = [
        {
            "type": "heatmap",
            "z": z,
            "x": cols,
            "y": rows,
            "text": [["" if np.isnan(c) else format(c, fmt) for c in row] for row in z.tolist()],
            "texttemplate": "%{text}",
            "hovertemplate": t("fig.hover_matrix", lang, row="%{y}", col="%{x}", value="%{z:.4g}") + "<extra></extra>",
            "showscale": False,
            "xgap": 1,
            "ygap": 1,
        }
        | colour(z, None, None)
    ]
    if masked.any():
        data.append(_masked_trace(masked, rows, cols, lang))
    layout = {
        "title": layout_title(title or ""),
        "height": int(np.clip(130 + 34 * len(rows), 260, 860)),
        "xaxis": col_axis | {"side": "top", "tickangle": -90 if stand_upright(col_axis["ticktext"]) else 0},
        "yaxis": row_axis | {"autorange": "reversed"},
    }
    return figure(data, layout)


def _masked_trace(masked: np.ndarray, rows: list[str], cols: list[str], lang: str) -> Json:
    """The masked cells' "-inf", written on the page background: a NaN heatmap cell is a gap,
    whatever the heatmap does with its text."""
    mi, mj = np.nonzero(masked)
    return {
        "type": "scatter",
        "x": [cols[j] for j in mj],
        "y": [rows[i] for i in mi],
        "mode": "text",
        "text": [t("fig.masked_cell", lang)] * mi.size,
        "hovertext": [t("fig.hover_masked", lang, row=rows[i], col=cols[j]) for i, j in zip(mi, mj, strict=True)],
        "hoverinfo": "text",
        "name": t("fig.masked", lang),
        "showlegend": False,
    }
