"""Figures of the digits ViT (training/digits.py): the held-out image beside each head's attention
from the class token over its 16 patches, and the rollout from the class token, every patch map
upsampled to the image's 8 x 8 pixels (one 2 x 2 patch = 4 pixels of the same value)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ._base import Json, figure, layout_title, panel_title


def class_token_maps(weights: np.ndarray, rollout: np.ndarray, layer: int) -> list[np.ndarray]:
    """Each head of `layer`'s class-token row over the 16 patches (row-major 4 x 4), then the
    rollout's, each upsampled to 8 x 8 pixels."""
    rows = [*weights[layer, :, 0, 1:], rollout[0, 1:]]
    return [np.kron(np.asarray(row, dtype=np.float64).reshape(4, 4), np.ones((2, 2))) for row in rows]


def digit_panels(
    image: np.ndarray, maps: Sequence[np.ndarray], titles: Sequence[str], title: str, lang: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """One row of square panels: the image (grey, 0..16), then each map (its own 0..max scale)."""
    panels = [np.asarray(image, dtype=np.float64).reshape(8, 8), *maps]
    n = len(panels)
    gap = 0.02
    width = (1 - gap * (n - 1)) / n
    data: list[Json] = []
    layout: Json = {"title": layout_title(title), "height": 300, "margin": {"l": 10, "r": 10, "t": 70, "b": 10},
                    "annotations": []}  # fmt: skip
    for k, (z, name) in enumerate(zip(panels, [t("digits.image", lang), *titles], strict=True)):
        suffix = "" if k == 0 else str(k + 1)
        start = k * (width + gap)
        hover = t("digits.hover_pixel", lang) if k == 0 else t("digits.hover_share", lang)
        data.append({"type": "heatmap", "z": z.tolist(), "xaxis": f"x{suffix}", "yaxis": f"y{suffix}",
                     "colorscale": "Greys" if k == 0 else "Viridis", "showscale": False,
                     "zmin": 0, "zmax": 16 if k == 0 else max(float(z.max()), 1e-9),
                     "hovertemplate": hover + "<extra>" + name + "</extra>"})  # fmt: skip
        bare = {"showticklabels": False, "showgrid": False, "zeroline": False}
        x_axis = bare | {"ticks": "", "showline": False, "domain": [start, start + width]}
        layout[f"xaxis{suffix}"] = x_axis | {"scaleanchor": f"y{suffix}", "constrain": "domain"}
        layout[f"yaxis{suffix}"] = bare | {"autorange": "reversed"}
        layout["annotations"].append(panel_title(name, start + width / 2))
    return figure(data, layout)
