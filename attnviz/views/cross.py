"""Figures of the encoder-decoder run: the alignment score and the held-out exact match against
the training step (`alignment_curves`). The cross-attention maps themselves are `heatmap`s of a
rectangular `Attention` (output tokens over input tokens)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ._base import HEAD_COLORS, Json, figure, layout_title


def alignment_curves(
    steps: Sequence[int] | np.ndarray,
    alignment: Sequence[float] | np.ndarray,
    exact: Sequence[float] | np.ndarray,
    *,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Alignment score and exact match (both 0..1) at each snapshot's step."""
    x = np.asarray(steps, dtype=np.int64)
    data: list[Json] = []
    for values, key, colour in ((alignment, "s2s.alignment", HEAD_COLORS[0]), (exact, "s2s.exact", HEAD_COLORS[1])):
        y = np.asarray(values, dtype=np.float64)
        if y.shape != x.shape:
            raise ValueError(f"{key}: {y.shape} values for {x.shape} steps")
        data.append({"type": "scatter", "mode": "lines+markers", "x": x, "y": y, "name": t(key, lang),
                     "line": {"color": colour}, "hovertemplate": "%{x}: %{y:.3f}<extra></extra>"})  # fmt: skip
    layout: Json = {
        "title": layout_title(t("s2s.curves_title", lang)),
        "height": 340,
        "xaxis": {"title": {"text": t("s2s.step", lang)}},
        "yaxis": {"range": [0, 1.02], "tickformat": ".0%"},
        "legend": {"orientation": "h", "y": -0.25},
    }
    return figure(data, layout)
