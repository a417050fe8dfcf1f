"""bertviz-style head view: queries on the left, keys on the right, a line per (query, key) link,
its opacity binned by weight (LINK_LEVELS): a trace has one opacity, so a head draws a trace a level.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ..result import Attention
from ._base import HEAD_COLORS, MAX_TICK_LABELS, Json, escape, figure, layout_title, level, polylines, tick_step

DEFAULT_MAX_LINKS = 4096  # more lines than this are unreadable and slow to draw
MIN_LINK_WEIGHT = 0.01  # lighter links are not drawn (bertviz draws them at opacity < 0.01)
# A link of weight w is drawn at the opacity of the highest level w reaches. Opacity tracks the
# weight, lifted at the bottom so a 0.05 link is still faintly visible.
LINK_LEVELS = ((MIN_LINK_WEIGHT, 0.06), (0.05, 0.12), (0.1, 0.25), (0.2, 0.45), (0.4, 0.7), (0.7, 1.0))


def head_view(
    att: Attention,
    layer: int = 0,
    heads: Sequence[int] | None = None,
    highlight: int | None = None,
    max_links: int | None = None,
    *,
    title: str | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Queries on the left, keys on the right, a line per (i, j), one colour per head.
    heads=None: every head; highlight=i: only query i's lines. Beyond `max_links` only each
    query's strongest links are kept, said in the note. `title` replaces the heading, not the
    note. Token markers carry customdata [i] (see `token_pick`).
    """
    att.require_square("the head view")
    chosen = list(range(att.n_heads)) if heads is None else [int(h) for h in heads]
    for h in chosen or [0]:
        att.head(layer, h)  # IndexError for a layer or head out of range
    if highlight is not None and not 0 <= highlight < att.n:
        raise IndexError(f"highlight {highlight} out of range 0..{att.n - 1}")
    queries = np.arange(att.n) if highlight is None else np.array([highlight])
    budget = DEFAULT_MAX_LINKS if max_links is None else max(1, int(max_links))
    per_query = min(att.n, max(1, budget // max(1, len(chosen) * len(queries))))
    tokens = [escape(tok) for tok in att.tokens]
    rows = att.weights[layer][chosen][:, queries]  # (heads, q, n)
    data = _link_traces(rows, chosen, queries, per_query, lang) + _token_traces(tokens, highlight, lang)
    heading = _heading(att, layer, chosen, highlight, tokens, lang) if title is None else title
    capped = per_query < att.n
    note = t("fig.note_links_capped", lang, k=per_query, n=att.n) if capped else t("fig.note_head_view", lang)
    layout = {
        "title": layout_title(heading, note),
        "height": int(np.clip(120 + 22 * att.n, 420, 1400)),
        "hovermode": "closest",
        "margin": {"l": 110, "r": 110, "b": 60},
        # under the token columns: on the right it covered the key tokens
        "legend": {
            "title": {"text": t("fig.head", lang)},
            "orientation": "h",
            "x": 0.5,
            "xanchor": "center",
            "y": 0,
            "yanchor": "top",
        },
        "xaxis": {"visible": False, "range": [-0.35, 1.35], "fixedrange": True},
        "yaxis": {"visible": False, "range": [att.n - 0.5, -0.5]},
    }
    return figure(data, layout)


def _link_traces(rows: np.ndarray, heads: list[int], queries: np.ndarray, per_query: int, lang: str) -> list[Json]:
    """One line trace per (head, opacity level) that has links, from each head's rows (heads, q, n):
    each query's `per_query` strongest keys that weigh at least MIN_LINK_WEIGHT. The strongest
    level carries the legend."""
    n = rows.shape[-1]
    if per_query < n:
        keys = np.argpartition(-rows, per_query - 1, axis=-1)[..., :per_query]  # (heads, q, k)
    else:
        keys = np.broadcast_to(np.arange(n), rows.shape)  # (heads, q, n)
    src = np.repeat(queries, keys.shape[-1])
    traces: list[Json] = []
    for colour_index, (h, dst, w) in enumerate(zip(heads, keys, np.take_along_axis(rows, keys, -1), strict=True)):
        w, dst = w.ravel(), dst.ravel()
        levels = np.where(w >= MIN_LINK_WEIGHT, level(w, LINK_LEVELS), -1)  # -1: not drawn (NaN too)
        for index, (_, opacity) in enumerate(LINK_LEVELS):
            chosen = levels == index
            if not chosen.any():
                continue
            count = int(chosen.sum())
            xs, ys = polylines(np.tile([0.0, 1.0], (count, 1)), np.column_stack([src[chosen], dst[chosen]]))
            traces.append(
                {
                    "type": "scatter",
                    "x": xs,
                    "y": ys,
                    "mode": "lines",
                    "line": {"color": HEAD_COLORS[colour_index % len(HEAD_COLORS)], "width": 1.5},
                    "opacity": opacity,
                    "hoverinfo": "skip",
                    "name": t("fig.head_n", lang, h=h),
                    "legendgroup": f"h{h}",
                    "showlegend": index == int(levels.max()),
                }
            )
    return traces


def _token_traces(tokens: list[str], highlight: int | None, lang: str) -> list[Json]:
    """The query column (x=0) and key column (x=1): labelled, hoverable, clickable markers."""
    n = len(tokens)
    step = tick_step(n)
    shown = [tok if i % step == 0 or i == highlight else "" for i, tok in enumerate(tokens)]
    if highlight is not None:
        shown[highlight] = f"<b>{shown[highlight]}</b>"
    return [
        {
            "type": "scatter",
            "x": np.full(n, x, dtype=np.int8),
            "y": np.arange(n, dtype=np.int32),
            "mode": "markers+text",
            "text": shown,
            "textposition": position,
            "cliponaxis": False,
            "marker": {"size": 5 if n <= MAX_TICK_LABELS else 2, "color": "gray"},
            "customdata": [[i] for i in range(n)],
            "hovertext": [t(hover, lang, token=tok, i=i) for i, tok in enumerate(tokens)],
            "hoverinfo": "text",
            "name": t(side, lang),
            "showlegend": False,
        }
        for x, side, hover, position in (
            (0, "fig.query", "fig.hover_query_token", "middle left"),
            (1, "fig.key", "fig.hover_key_token", "middle right"),
        )
    ]


def _heading(att: Attention, layer: int, heads: list[int], highlight: int | None, tokens: list[str], lang: str) -> str:
    """The heading: layer and heads ("layer 2, heads 0, 3"), and what the highlighted token looks at."""
    if len(heads) == att.n_heads:
        which = t("fig.all_heads", lang)
    elif len(heads) == 1:
        which = t("fig.head_n", lang, h=heads[0])
    else:
        which = t("fig.heads_n", lang, heads=", ".join(t("fig.head_index", lang, h=h) for h in heads))
    if highlight is None:
        return t("fig.layer_which", lang, layer=layer, which=which)
    return t("fig.head_view_focus", lang, layer=layer, which=which, token=tokens[highlight], i=highlight)
