"""Heads switched off: the pruning curve (Michel et al. 2019), head importance and how much each
head's map changed as (layers, heads) grids with the switched-off heads crossed out, and the
effect on each token. Data in (numpy, `Attention`), figure out; words from the catalogue."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, Protocol

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ..result import Attention
from ._base import Json, figure, layout_title
from .charts import token_bars
from .grid import layer_head_grid

__all__ = ["ablation_effect", "attention_change", "importance_grid", "mark_off", "pruning_curve"]

OFF_COLOR = "#FF6692"  # the cross over a head switched off: a mid-tone on light and dark themes
CURVE_COLORS = {"gradient": "#636EFA", "effect": "#00CC96", "random": "#AB63FA"}


class Curve(Protocol):
    """What the pruning curve draws of one order (explain.PruningCurve)."""

    @property
    def k(self) -> np.ndarray: ...

    @property
    def distance(self) -> np.ndarray: ...


def pruning_curve(curves: Mapping[str, Curve], *, title: str | None = None, lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """Sentence distance against the number of heads switched off, one line per order
    ("gradient": Michel et al.'s estimate, "effect": the real single-head effect, "random")."""
    data: list[Json] = []
    hover = t("abl.fig.hover_curve", lang, k="%{x}", d="%{y:.4f}")
    for order, curve in curves.items():
        data.append(
            {
                "type": "scatter",
                "x": np.asarray(curve.k).tolist(),
                "y": np.asarray(curve.distance, dtype=np.float64).tolist(),
                "mode": "lines+markers",
                "name": t(f"abl.fig.order_{order}", lang),
                "line": {"color": CURVE_COLORS.get(order, "#636EFA")},
                "hovertemplate": hover,
            }
        )
    layout = {
        "title": layout_title(title or t("abl.fig.curve_title", lang), t("abl.fig.curve_note", lang)),
        "height": 420,
        "legend": {"orientation": "h", "y": -0.25},
        "xaxis": {"title": {"text": t("abl.fig.heads_off", lang)}, "rangemode": "tozero"},
        "yaxis": {"title": {"text": t("abl.fig.distance", lang)}, "rangemode": "tozero"},
    }
    return figure(data, layout)


def importance_grid(
    values: np.ndarray,
    which: Literal["effect", "gradient"],
    off: Iterable[tuple[int, int]] = (),
    *,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Head importance as a clickable (layers, heads) grid: "effect" (each head switched off
    alone) or "gradient" (Michel et al.'s estimate); heads in `off` crossed out."""
    if which not in ("effect", "gradient"):
        raise ValueError("which must be 'effect' or 'gradient'")
    fig = layer_head_grid(values, zmin=0.0, lang=lang)
    fig.update_layout(title=layout_title(t(f"abl.fig.grid_{which}", lang), t("abl.fig.note_off", lang)))
    return mark_off(fig, off)


def attention_change(
    base: Attention, switched: Attention, off: Iterable[tuple[int, int]] = (), *, lang: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """Mean |weight change| of every head's map between two runs of the same tokens, as a
    (layers, heads) grid; heads in `off` crossed out. Heads at or before the first switched
    layer stay at 0: a switch acts after that layer's weights."""
    if base.weights.shape != switched.weights.shape:
        raise ValueError(f"attention shapes differ: {base.weights.shape} and {switched.weights.shape}")
    change = np.abs(switched.weights.astype(np.float64) - base.weights).mean(axis=(2, 3))  # (L, H)
    fig = layer_head_grid(change, zmin=0.0, lang=lang)
    fig.update_layout(title=layout_title(t("abl.fig.change_title", lang), t("abl.fig.change_note", lang)))
    return mark_off(fig, off)


def ablation_effect(
    tokens: Sequence[str], distances: np.ndarray, sentence_distance: float, *, lang: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """Per-token cosine distance of the final states with heads switched off; the sentence
    embedding's distance in the title."""
    title = t("abl.fig.effect_title", lang, d=f"{sentence_distance:.4f}")
    return token_bars(tokens, {t("abl.fig.distance", lang): np.asarray(distances)}, title=title, lang=lang)


def mark_off(fig: go.Figure, heads: Iterable[tuple[int, int]]) -> go.Figure:
    """Cross out cells (layer, head) of a `model_view` or `layer_head_grid` figure (cells are
    centred on (head, layer)). Shapes, not markers: they take no clicks from the cells."""
    lines = []
    for layer, head in sorted({(int(a), int(b)) for a, b in heads}):
        for y0, y1 in ((layer - 0.35, layer + 0.35), (layer + 0.35, layer - 0.35)):
            lines.append(
                {
                    "type": "line",
                    "x0": head - 0.35,
                    "x1": head + 0.35,
                    "y0": y0,
                    "y1": y1,
                    "xref": "x",
                    "yref": "y",
                    "line": {"color": OFF_COLOR, "width": 3},
                }
            )
    if lines:
        fig.update_layout(shapes=[*fig.layout.shapes, *lines])
    return fig
