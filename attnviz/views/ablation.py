"""Heads switched off: the pruning curve (Michel et al. 2019), head importance and each head's
map change as (layers, heads) grids with the switched-off heads crossed out, and the effect on
each token. `measure` is explain.ablation.Measure: "embedding" distance or "next_token" drop."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ..result import Attention
from ._base import escape, figure, layout_title
from .charts import token_bars
from .decoder import visible
from .grid import layer_head_grid

if TYPE_CHECKING:  # the views take explain's results but do not need torch to be imported
    from ..explain import PruningCurve

OFF_COLOR = "#FF6692"  # the cross over a head switched off: a mid-tone on light and dark themes
CURVE_COLORS = {"gradient": "#636EFA", "effect": "#00CC96", "random": "#AB63FA"}


def _token(token: str) -> str:
    """The next token as figure text: visible (a space as ␣, a line break as \\n, any other
    control character as its code: a byte token can be one) and escaped."""
    return escape("".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in visible(token)))


def pruning_curve(curves: Mapping[str, PruningCurve], *, lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """The output's change against the number of heads switched off, one line per order."""
    first = next(iter(curves.values()), None)
    lm = first is not None and first.measure == "next_token"
    hover = t("abl.fig.hover_curve_lm" if lm else "abl.fig.hover_curve", lang, k="%{x}", d="%{y:.4f}")
    note = t("abl.fig.curve_note_lm", lang, token=_token(first.next_token)) if lm and first else None
    data = [
        {
            "type": "scatter",
            "x": np.asarray(curve.k).tolist(),
            "y": np.asarray(curve.distance, dtype=np.float64).tolist(),
            "mode": "lines+markers",
            "name": t(f"abl.fig.order_{order}", lang),
            "line": {"color": CURVE_COLORS.get(order, "#636EFA")},
            "hovertemplate": hover,
        }
        for order, curve in curves.items()
    ]
    layout = {
        "title": layout_title(t("abl.fig.curve_title", lang), note or t("abl.fig.curve_note", lang)),
        "height": 420,
        "legend": {"orientation": "h", "y": -0.25},
        "xaxis": {"title": {"text": t("abl.fig.heads_off", lang)}, "rangemode": "tozero"},
        # a drop in log-probability can be negative (the token became likelier): no floor at 0
        "yaxis": {"title": {"text": t("aware.fig_logprob_drop" if lm else "abl.fig.distance", lang)}}
        | ({} if lm else {"rangemode": "tozero"}),
    }
    return figure(data, layout)


def importance_grid(
    values: np.ndarray,
    which: Literal["effect", "gradient"],
    off: Iterable[tuple[int, int]] = (),
    *,
    measure: str = "embedding",
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Head importance as a clickable (layers, heads) grid: "effect" (each head switched off
    alone) or "gradient" (Michel et al.'s estimate); heads in `off` crossed out. A decoder's
    effect (`measure` "next_token") is a signed drop, drawn on a scale diverging at 0."""
    if which not in ("effect", "gradient"):
        raise ValueError("which must be 'effect' or 'gradient'")
    lm = measure == "next_token"
    key = f"abl.fig.grid_{which}" + ("_lm" if lm and which == "effect" else "")
    fig = layer_head_grid(values, t(key, lang), zmin=None if lm else 0.0, note=t("abl.fig.note_off", lang), lang=lang)
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
    title, note = t("abl.fig.change_title", lang), t("abl.fig.change_note", lang)
    return mark_off(layer_head_grid(change, title, zmin=0.0, note=note, lang=lang), off)


def ablation_effect(
    tokens: Sequence[str],
    distances: np.ndarray,
    effect: float,
    *,
    measure: str = "embedding",
    next_token: str = "",
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Per-token cosine distance of the final states with heads switched off; the output's
    change (by `measure`) in the title."""
    key = "abl.fig.effect_title_lm" if measure == "next_token" else "abl.fig.effect_title"
    title = t(key, lang, token=_token(next_token), d=f"{effect:.4f}")
    return token_bars(tokens, {t("abl.fig.distance", lang): np.asarray(distances)}, title=title, lang=lang)


def mark_off(fig: go.Figure, heads: Iterable[tuple[int, int]]) -> go.Figure:
    """Cross out cells (layer, head) of a `model_view` or `layer_head_grid` figure (cells are
    centred on (head, layer)). Shapes, not markers: they take no clicks from the cells."""
    line = {"type": "line", "xref": "x", "yref": "y", "line": {"color": OFF_COLOR, "width": 3}}
    lines = [
        line | {"x0": head - 0.35, "x1": head + 0.35, "y0": layer + d, "y1": layer - d}
        for layer, head in sorted({(int(a), int(b)) for a, b in heads})
        for d in (-0.35, 0.35)
    ]
    if lines:
        fig.update_layout(shapes=[*fig.layout.shapes, *lines])
    return fig
