"""Plain charts around the attention maps: bars over the tokens (`token_bars`), every head ranked
for one query/key pair (`token_focus`), and cost against length (`cost_sweep`); and the caption a
figure carries on a slide (`slide_caption`, `captioned`): the model and the sentence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ..result import Attention
from ._base import (
    EDGE_COLOR,
    Json,
    escape,
    figure,
    head_label,
    layout_title,
    one_line,
    panel_title,
    subplot,
    token_axis,
)
from .margins import stand_upright


def token_bars(
    tokens: Sequence[str],
    series: Mapping[str, np.ndarray],
    title: str | None = None,
    highlight: int | None = None,
    *,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Grouped bars over the tokens, one series per method; `highlight=i` shades token i. `title`
    and the series names are the caller's words, shown as given; tokens are escaped."""
    keys, axis = token_axis(tokens)
    data: list[Json] = []
    hover = t("fig.hover_value", lang, label="%{x}", value="%{y:.4f}")
    for name, values in series.items():
        y = np.array(values)  # a copy: the figure must not alias the caller's array
        if y.shape != (len(keys),):
            raise ValueError(f"series {name!r} has shape {y.shape}, expected ({len(keys)},)")
        data.append({"type": "bar", "x": keys, "y": y, "name": name, "hovertemplate": hover})
    layout: Json = {
        "title": layout_title(title or ""),
        "barmode": "group",
        "height": 380,
        "legend": {"orientation": "h", "y": -0.25},
        "xaxis": axis | {"tickangle": 90 if stand_upright(axis["ticktext"]) else 0},
    }
    if highlight is not None:
        if not 0 <= highlight < len(keys):
            raise IndexError(f"highlight {highlight} out of range 0..{len(keys) - 1}")
        layout["shapes"] = [
            {
                "type": "rect",
                "xref": "x",
                "yref": "y domain",
                "x0": highlight - 0.5,
                "x1": highlight + 0.5,
                "y0": 0,
                "y1": 1,
                "fillcolor": "gray",
                "opacity": 0.2,
                "line": {"width": 0},
                "layer": "below",
            }
        ]
    return figure(data, layout)


def token_focus(
    att: Attention,
    query: int,
    key: int,
    top: int | None = None,
    *,
    title: str | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Every (layer, head) ranked by how much `query` attends to `key`, strongest at the top; bars
    carry customdata [layer, head]. A dotted line marks 1/n, what a uniform head would give.
    `title` replaces the heading, not the note."""
    n = att.n_keys
    if not (0 <= query < att.n and 0 <= key < n):
        raise IndexError(f"query {query} / key {key} outside 0..{att.n - 1} / 0..{n - 1}")
    flat = att.weights[:, :, query, key].ravel()  # (L*H,)
    order = np.argsort(-flat, kind="stable")
    if top is not None:
        order = order[: max(1, int(top))]
    cells = [[int(layer), int(head)] for layer, head in zip(*np.divmod(order, att.n_heads), strict=True)]
    bar = {
        "type": "bar",
        "x": flat[order],
        "y": [head_label(layer, head, lang=lang) for layer, head in cells],
        "orientation": "h",
        "customdata": cells,
        "marker": {"color": EDGE_COLOR},
        "hovertemplate": t("fig.hover_value", lang, label="%{y}", value="%{x:.4f}") + "<extra></extra>",
    }
    q, k = escape(att.tokens[query]), escape(att.keys[key])
    if title is None:
        title = t("fig.focus_title", lang, q=q, qi=query, k=k, ki=key)
    shown = t("fig.all_heads", lang) if top is None else t("fig.top_heads", lang, k=len(order), total=flat.size)
    layout = {
        "title": layout_title(title, t("fig.note_focus", lang, q=q, k=k, shown=shown)),
        "height": 140 + 18 * len(order),
        "clickmode": "event+select",
        "yaxis": {"autorange": "reversed", "type": "category"},
        "xaxis": {"title": {"text": t("fig.attention_weight", lang)}, "rangemode": "tozero"},
        # a dotted line at 1/n across the plot's height (what add_vline draws), labelled above
        "shapes": [{"type": "line", "xref": "x", "yref": "y domain", "x0": 1.0 / n, "x1": 1.0 / n, "y0": 0, "y1": 1,
                    "line": {"dash": "dot"}}],
        "annotations": [{"x": 1.0 / n, "xref": "x", "y": 1, "yref": "y domain", "text": t("fig.uniform", lang),
                         "showarrow": False, "xanchor": "center", "yanchor": "bottom"}],
    }  # fmt: skip
    return figure([bar], layout)


def cost_sweep(
    rows: Sequence[Mapping[str, float]], *, title: str | None = None, lang: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """Time and memory against sequence length, log-log, each with a dotted n^2 line through the
    largest value at the largest n (in the first panel's legend). rows: dicts with "n",
    "forward_s", "figures_s", "mb" (the last three optional)."""
    data = sorted(rows, key=lambda r: r["n"])
    n = np.array([r["n"] for r in data], dtype=float)
    panels = (
        ("fig.cost_time", (("forward_s", "fig.cost_forward"), ("figures_s", "fig.cost_figures"))),
        ("fig.cost_memory_mb", (("mb", "fig.cost_memory"),)),
    )
    # two log-log panels in one row, each titled above (what make_subplots(1, 2) lays out)
    layout: Json = {"title": layout_title(t("fig.cost_title", lang) if title is None else title), "height": 400}
    layout["annotations"] = []
    traces: list[Json] = []
    for k, ((label, series), domain) in enumerate(zip(panels, ([0.0, 0.45], [0.55, 1.0]), strict=True)):
        x_axis = {"domain": domain, "type": "log", "title": {"text": t("fig.cost_tokens", lang)}}
        axes = subplot(layout, k, x_axis, {"domain": [0.0, 1.0], "type": "log"})
        layout["annotations"].append(panel_title(t(label, lang), sum(domain) / 2) | {"font": {"size": 16}})
        anchor = 0.0
        for key, name in series:
            y = np.array([r.get(key, np.nan) for r in data], dtype=float)
            if np.isnan(y).all():
                continue
            line = {"type": "scatter", "x": n.tolist(), "y": y.tolist(), "mode": "lines+markers", "name": t(name, lang)}
            traces.append(line | axes)
            if np.isfinite(y[-1]):
                anchor = max(anchor, float(y[-1]))
        if anchor > 0:
            reference = {
                "type": "scatter",
                "x": n.tolist(),
                "y": (anchor * (n / n[-1]) ** 2).tolist(),
                "mode": "lines",
                "line": {"dash": "dot", "color": "gray"},
                "name": "∝ n²",
                "showlegend": k == 0,
                "legendgroup": "n2",
            }
            traces.append(reference | axes)
    return figure(traces, layout)


CAPTION_CHARS = 140  # a longer sentence is cut (with "…") in a caption: one line on a 1920 px slide
CAPTION_FONT = {"size": 13, "color": "#555555"}
CAPTION_ROOM = 36  # px added under the figure for the caption line


def slide_caption(text: str | None, model: str | None) -> str:
    """ "model · “sentence”" as Plotly text (escaped: a sentence is whatever a visitor typed),
    whitespace collapsed, cut to `CAPTION_CHARS` characters."""
    parts = []
    if model:
        parts.append(escape(" ".join(str(model).split())[:CAPTION_CHARS]))
    if text:
        parts.append(f"“{escape(one_line(text, CAPTION_CHARS))}”")
    return " · ".join(parts)


def captioned(fig: go.Figure, caption: str) -> go.Figure:
    """A copy of `fig` with `caption` (Plotly text, see `slide_caption`) in small print under the
    plot, in a bottom margin made room for: what an exported image or page shows of its source."""
    out = go.Figure(fig)
    if not caption:
        return out
    bottom = out.layout.margin.b if out.layout.margin.b is not None else 80
    out.update_layout(margin={"b": bottom + CAPTION_ROOM})
    out.add_annotation(
        text=caption,
        xref="paper",
        yref="paper",
        x=0,
        y=0,
        xanchor="left",
        yanchor="top",
        yshift=-(bottom + 6),
        showarrow=False,
        align="left",
        font=CAPTION_FONT,
        name="attnviz-caption",
    )
    return out
