"""Example pictures for the first screen of pages whose own charts need a run first: the bundled
method agreement (Caveats) and the map a head must learn on the task's probe (Training lab).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ._base import SEQUENTIAL, figure, layout_title, token_axis
from .evidence import method_label
from .margins import PHONE_CHART_PX, label_px, top_title, wrapped

EXAMPLE_HEIGHT = 330  # px: the example sits on the first screen, above the controls


def method_agreement(rows: Sequence[dict[str, Any]], *, lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """One bar per method: its mean Spearman correlation with leave-one-out over the bundled
    sentences; rows without a number are left out."""
    kept = [r for r in rows if isinstance(r.get("spearman"), int | float) and np.isfinite(r["spearman"])]
    kept.sort(key=lambda r: float(r["spearman"]))
    names = [method_label(str(r["method"]), lang) for r in kept]
    values = [float(r["spearman"]) for r in kept]
    trace = {
        "type": "bar",
        "orientation": "h",
        "x": values,
        "y": names,
        "text": [f"{v:.2f}" for v in values],
        "textposition": "auto",
        "marker": {"color": ["#EF553B" if str(r["method"]).startswith("attention") else "#636EFA" for r in kept]},
        "hovertemplate": t("pic.hover_agreement", lang, method="%{y}", value="%{x:.3f}") + "<extra></extra>",
    }
    title, top = top_title(t("pic.agreement_title", lang))
    plot_px = PHONE_CHART_PX - 20 - max((label_px(name) for name in names), default=0) - 16  # less margins, names
    x_title = wrapped(t("pic.agreement_x", lang), plot_px - 10, 14)  # the theme's 14 px axis titles, centred on it
    bottom = 22 + 18 * (x_title.count("<br>") + 1)
    layout = {
        "title": title,
        "height": EXAMPLE_HEIGHT - 100 + top + bottom,
        "margin": {"l": 10, "r": 10, "t": top, "b": bottom},
        "xaxis": {"range": [min(0.0, *values) if values else 0.0, 1.0], "title": {"text": x_title}},
        "yaxis": {"automargin": True},
    }
    return figure([trace], layout)


def target_map(n: int, cols: Sequence[int]) -> np.ndarray:
    """(n, n): row t puts all its weight on column cols[t] (-1 or out of range: an empty row)."""
    z = np.zeros((n, n), dtype=np.float32)
    for row, col in enumerate(list(cols)[:n]):
        if 0 <= col <= row:  # a causal model can only look back
            z[row, int(col)] = 1.0
    return z


def pattern_map(tokens: Sequence[str], cols: Sequence[int], *, title: str, lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """The map a head that solved the task would draw on `tokens` (rows: the token that reads,
    columns: the earlier token it should read)."""
    n = len(tokens)
    keys, axis = token_axis(tokens)
    axis = axis | {"tickfont": {"size": 9}, "tickangle": -90}
    trace = {
        "type": "heatmap",
        "z": target_map(n, cols),
        "x": keys,
        "y": keys,
        "zmin": 0.0,
        "zmax": 1.0,
        "colorscale": SEQUENTIAL,
        "showscale": False,
        "xgap": 1,
        "ygap": 1,
        "hovertemplate": t("pic.hover_pattern", lang, query="%{y}", source="%{x}") + "<extra></extra>",
    }
    layout = {
        "title": layout_title(title, t("pic.pattern_note", lang)),
        "height": EXAMPLE_HEIGHT + 40,
        "margin": {"l": 10, "r": 10, "t": 100, "b": 10},
        "xaxis": axis | {"side": "bottom", "constrain": "domain"},
        "yaxis": axis | {"autorange": "reversed", "scaleanchor": "x", "constrain": "domain", "tickangle": 0},
    }
    return figure([trace], layout)
