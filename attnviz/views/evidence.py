"""The evidence beside the attention maps: a whole-layer contribution map (`contribution_map`),
the deletion curves of the faithfulness scoreboard (`deletion_curves`) and its agreement with
leave-one-out layer by layer (`layer_agreement`). Words come from the catalogue (evidence.json)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, catalogue, t
from ._base import (
    BAR_ROOM_PX,
    DIVERGING,
    HEAD_COLORS,
    Json,
    colorbar_under,
    escape,
    figure,
    panel_title,
    subplot,
    token_axis,
    token_map_trace,
)
from .margins import PANEL_LINE_PX, PHONE_CHART_PX, fit_margins, label_px, square_map_layout, top_title, wrapped

if TYPE_CHECKING:  # the views take explain's results but do not need torch to be imported
    from ..explain import Contributions, Scoreboard

RANDOM_COLOR = "#999999"
LEGEND_ROW_PX = 20  # a legend entry's row (12 px font)


def method_label(method: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """The display name of a method ("attention" is attention rollout); a name the catalogue
    does not know (your own scores passed as `extra`) is shown as given, escaped."""
    key = f"method.{method}"
    return t(key, lang) if key in catalogue(lang) else escape(method)


def contribution_map(
    c: Contributions, layer: int | None = None, *, zmax: float | None = None, lang: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """One method's (n, n) map: `layer`'s own mixing, or (layer=None) traced back to the input
    tokens. Output positions down the side, where they draw from across; rows sum to 1."""
    if layer is None:
        z = np.array(c.rolled, dtype=np.float32)
        which = t("fig.traced_to_input", lang)
    else:
        if not 0 <= layer < c.n_layers:
            raise IndexError(f"layer {layer} out of range 0..{c.n_layers - 1}")
        z = np.array(c.per_layer[layer], dtype=np.float32)
        which = t("fig.in_layer", lang, layer=layer)
    keys, axis = token_axis(c.tokens)
    hover = t("fig.hover_contribution", lang, i="%{y}", j="%{x}", w="%{z:.4f}")
    top = float(z.max()) if zmax is None else float(zmax)
    trace = token_map_trace(z, keys, t("fig.share", lang), hover) | {"zmin": 0.0, "zmax": top}
    title = t("fig.contribution_title", lang, method=method_label(c.method, lang), which=which)
    layout = square_map_layout(
        title, t("fig.note_contribution", lang), c.n, axis, t("fig.axis_from", lang), t("fig.axis_output", lang)
    )
    return figure([trace], fit_margins(layout, below=BAR_ROOM_PX))


def deletion_curves(
    board: Scoreboard,
    *,
    highlight: str | None = None,
    position: int | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Output change against the share of tokens removed, one line per method in its own order,
    the random floor dashed grey; the area is the AOPC. `highlight` draws one method thicker;
    `position` numbers the output token as the page does (board.query when None)."""
    x = np.round(100 * board.fractions, 1).tolist()
    data: list[Json] = []
    hover = t("fig.hover_deletion", lang, x="%{x}", k="%{customdata}", y="%{y:.4f}")
    for k, row in enumerate(board.rows):
        name = method_label(row.method, lang)
        line = {"width": 4 if row.method == highlight else 2, "color": HEAD_COLORS[k % len(HEAD_COLORS)]}
        if row.method == "random":
            line |= {"color": RANDOM_COLOR, "dash": "dash"}
        aopc = t("fig.aopc_value", lang, v=f"{row.aopc:.3f}")
        data.append(
            {
                "type": "scatter",
                "x": x,
                "y": np.asarray(row.curve, dtype=np.float64).round(6).tolist(),
                "customdata": board.removed.tolist(),
                "mode": "lines+markers",
                "name": f"{name} ({aopc})",
                "line": line,
                "marker": {"size": 5},
                "hovertemplate": f"{name}<br>{hover}<extra></extra>",
            }
        )
    title, top = top_title(
        t("fig.deletion_title", lang, output=_output_name(board, lang, position)),
        t("aware.fig_note_deletion_lm" if _is_lm(board) else "fig.note_deletion", lang),
    )
    legend_px = LEGEND_ROW_PX * len(data)  # one method a row, under the axis title
    layout = {
        "title": title,
        "margin": {"t": top, "b": 70 + legend_px},
        "height": 360 + top + legend_px,
        "xaxis": {"title": {"text": t("fig.removed_share", lang)}, "ticksuffix": "%", "range": [-2, 102]},
        # what the curves measure: a cosine distance (0 to 2) or a drop in log-probability (nats, unbounded)
        "yaxis": {
            "title": {"text": t("aware.fig_logprob_drop" if _is_lm(board) else "fig.output_change", lang)},
            "rangemode": "tozero",
        },
        # one method a row at the figure's foot: a legend laid across ran, on a phone, into five rows
        # over the x axis's title
        "legend": {"orientation": "v", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0, "xanchor": "left"},
    }
    return figure(data, layout)


def layer_agreement(board: Scoreboard, *, position: int | None = None, lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """Spearman of each whole-layer method with leave-one-out at each layer's output: left, the
    map traced back through that layer; right, its own map. `position`: as deletion_curves'."""
    rows = [r for r in board.rows if r.layer_rolled is not None and r.layer_single is not None]
    if not rows:
        raise ValueError("the scoreboard has no whole-layer method to show by layer")
    names = [method_label(r.method, lang) for r in rows]
    layers = [str(layer) for layer in range(len(board.loo_layers))]
    panels = (
        ([r.layer_rolled for r in rows], t("fig.panel_traced", lang)),
        ([r.layer_single for r in rows], t("fig.panel_single", lang)),
    )
    title, top = top_title(
        t("fig.layer_agreement_title", lang, output=_output_name(board, lang, position)),
        t("fig.note_layer_agreement", lang),
    )
    # a panel is 0.47 of the plot, which a phone's chart shares with the methods' names
    panel_px = 0.47 * (PHONE_CHART_PX - max(label_px(name) for name in names) - 24) - 8
    labels = [wrapped(label, max(panel_px, 48)) for _, label in panels]
    top += PANEL_LINE_PX * max(label.count("<br>") + 1 for label in labels)
    bottom = 60 + BAR_ROOM_PX  # the layer numbers and the axis title, then the colour bar
    layout: Json = {"title": title, "height": 40 + top + bottom + 42 * len(rows), "margin": {"t": top, "b": bottom},
                    "annotations": []}  # fmt: skip
    data: list[Json] = []
    for k, ((values, _), label, domain) in enumerate(zip(panels, labels, ([0.0, 0.47], [0.53, 1.0]), strict=True)):
        x_axis = {"domain": domain, "title": {"text": t("fig.layer", lang)}}
        axes = subplot(layout, k, x_axis, {"autorange": "reversed", "showticklabels": k == 0})
        layout["annotations"].append(panel_title(label, sum(domain) / 2))
        z = np.array(values, dtype=np.float64)
        trace = {
            "type": "heatmap",
            "z": np.where(np.isfinite(z), z, np.nan).round(4).tolist(),
            "x": layers,
            "y": names,
            "colorscale": DIVERGING,
            "zmin": -1.0,
            "zmax": 1.0,
            "showscale": k == 1,
            "colorbar": colorbar_under("ρ"),  # standing, it took 80 px of a phone's width from the panels
            "texttemplate": "%{z:.2f}",
            "hovertemplate": t("fig.hover_layer_agreement", lang, m="%{y}", layer="%{x}", r="%{z:.3f}")
            + "<extra></extra>",
        }
        data.append(trace | axes)
    return figure(data, layout)


def _is_lm(board: Scoreboard) -> bool:
    """A decoder's scoreboard: its output is a log-probability, not a vector's cosine distance."""
    return board.output != "cosine distance"


def _output_name(board: Scoreboard, lang: str, position: int | None = None) -> str:
    i = board.query if position is None else position  # the number the page's token list gives it
    if _is_lm(board):  # the token whose log-probability is scored
        key = "aware.fig_next_token" if board.query is None else "aware.fig_next_after"
        return t(key, lang, token=escape(board.target), i=i)
    if board.query is None:
        return t("fig.output_sentence", lang)
    return t("fig.output_token", lang, token=escape(board.tokens[board.query]), i=i)
