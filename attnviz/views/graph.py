"""Attention as a directed graph: tokens clockwise on a circle from the top, an edge i -> j wherever
query i gives key j more than a threshold, its width binned by weight (EDGE_WIDTHS, a trace a bin),
an arrow head near the key end; self-attention is a small loop inside the node, whose size grows
with the attention the token receives.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ..result import Attention
from ._base import (
    EDGE_COLOR,
    NODE_COLOR,
    SPECIAL_COLOR,
    Json,
    escape,
    figure,
    layout_title,
    level,
    polylines,
    tick_step,
    which_head,
)

DEFAULT_MAX_EDGES = 400  # strongest edges kept at large n
EDGE_WIDTHS = ((0.0, 1.0), (0.2, 2.0), (0.4, 3.5), (0.7, 5.0))  # (lowest weight, line width in px)
LOOP = 0.09  # self-loop radius, in units of the circle's radius


def graph_view(
    att: Attention,
    layer: int = 0,
    head: int | None = 0,
    threshold: float = 0.1,
    max_edges: int | None = None,
    *,
    title: str | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Tokens on a circle, an edge i -> j wherever query i gives key j more than `threshold`.
    head=None: the layer's mean. Beyond `max_edges` the strongest are kept, said in the note.
    `title` replaces the heading, not the note. Arrow heads carry customdata [i, j], nodes [i].
    """
    att.require_square("the graph view")
    m = att.head(layer, head)  # (n, n)
    src, dst = np.nonzero(m > threshold)
    total = len(src)
    cap = DEFAULT_MAX_EDGES if max_edges is None else max(0, int(max_edges))
    strongest = np.argsort(-m[src, dst], kind="stable")[:cap]
    src, dst = src[strongest], dst[strongest]  # (e,) query and key of each edge drawn, strongest first
    w = m[src, dst]
    pos, start, end, arrow, angle = _geometry(att.n, src, dst)
    tokens = [escape(tok) for tok in att.tokens]
    data = [
        *_edge_traces(start, end, src == dst, w, threshold, lang),
        _arrow_trace(arrow, angle, src, dst, w, tokens, lang),
        _node_trace(pos, m, tokens, att.special, lang),
    ]
    if title is None:
        title = t("fig.graph_title", lang, layer=layer, which=which_head(head, att.n_heads, lang))
    key = "fig.note_edges_capped" if total > len(w) else "fig.note_edge" if total else "fig.note_no_edges"
    note = t(key, lang, k=len(w), total=total, t=f"{threshold:g}")
    layout = {
        "title": layout_title(title, note),
        "height": 620,
        "hovermode": "closest",
        "legend": {"title": {"text": t("fig.edge_weight", lang)}},
        "xaxis": {"visible": False, "range": [-1.4, 1.4]},
        "yaxis": {"visible": False, "range": [-1.3, 1.3], "scaleanchor": "x", "scaleratio": 1},
    }
    return figure(data, layout)


def _geometry(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, ...]:
    """Node centres (n, 2) on the unit circle, then per edge: its line's start and end (e, 2),
    shifted right of the i -> j direction (a self-loop starts at its ring's centre), its arrow
    head's position (e, 2) and angle (e,) in degrees."""
    angle = np.pi / 2 - 2 * np.pi * np.arange(n) / n
    pos = np.column_stack([np.cos(angle), np.sin(angle)])  # (n, 2) on the unit circle
    offset = min(0.025, 0.5 * np.sin(np.pi / max(n, 2)))  # i->j and j->i run side by side
    start, end = pos[src].copy(), pos[dst].copy()
    ordinary = src != dst
    direction = end - start
    length = np.linalg.norm(direction, axis=1, keepdims=True)
    heading = np.divide(direction, length, out=np.zeros_like(direction), where=length > 0)  # unit
    right = np.column_stack([heading[:, 1], -heading[:, 0]])
    start[ordinary] += offset * right[ordinary]
    end[ordinary] += offset * right[ordinary]
    arrow = start + 0.8 * (end - start)
    # A self-loop is a small circle just inside its node (the label sits outside); the arrow
    # sits on its far side.
    outward = pos[src[~ordinary]]
    start[~ordinary] = outward * (1 - LOOP)
    arrow[~ordinary] = start[~ordinary] - LOOP * outward
    heading[~ordinary] = np.column_stack([outward[:, 1], -outward[:, 0]])
    # arrow points up at angle 0 and turns clockwise: heading (dx, dy) is atan2(dx, dy)
    return pos, start, end, arrow, np.degrees(np.arctan2(heading[:, 0], heading[:, 1])).astype(np.float32)


def _edge_traces(
    start: np.ndarray, end: np.ndarray, loops: np.ndarray, w: np.ndarray, threshold: float, lang: str
) -> list[Json]:
    """One line trace per width bin that has edges: straight lines and self-loop rings (`loops`)."""
    ring = np.linspace(0, 2 * np.pi, 17)
    widths = level(w, EDGE_WIDTHS)
    traces: list[Json] = []
    for index, (lo, width) in enumerate(EDGE_WIDTHS):
        line = (widths == index) & ~loops
        loop = (widths == index) & loops
        if not (line.any() or loop.any()):
            continue
        ends = np.stack([start[line], end[line]], axis=1)  # (lines, 2, 2): each line's two ends
        lx, ly = polylines(ends[..., 0], ends[..., 1])
        centres = start[loop]  # (loops, 2)
        cx, cy = polylines(centres[:, :1] + LOOP * np.cos(ring), centres[:, 1:] + LOOP * np.sin(ring))
        lower = f"{max(lo, threshold):.2g}"
        upper = next((f"{h:.2g}" for h, _ in EDGE_WIDTHS[index + 1 :]), None)
        name = t("fig.weight_above" if upper is None else "fig.weight_range", lang, lo=lower, hi=upper)
        traces.append(
            {
                "type": "scatter",
                "x": np.concatenate([lx, cx]),
                "y": np.concatenate([ly, cy]),
                "mode": "lines",
                "line": {"color": EDGE_COLOR, "width": width},
                "opacity": 0.65,
                "hoverinfo": "skip",
                "name": name,
            }
        )
    return traces


def _arrow_trace(
    arrow: np.ndarray, angle: np.ndarray, src: np.ndarray, dst: np.ndarray, w: np.ndarray, tokens: list[str], lang: str
) -> Json:
    """Arrow heads: direction, and on hover the weight; customdata [i, j]."""
    return {
        "type": "scatter",
        "x": arrow[:, 0].astype(np.float32),
        "y": arrow[:, 1].astype(np.float32),
        "mode": "markers",
        "marker": {"symbol": "arrow", "size": 10, "color": EDGE_COLOR, "angle": angle},
        "customdata": [[i, j] for i, j in zip(src.tolist(), dst.tolist(), strict=True)],
        "hovertext": [
            t("fig.hover_edge", lang, src=tokens[i], i=i, dst=tokens[j], j=j, w=f"{w:.4f}")
            for i, j, w in zip(src.tolist(), dst.tolist(), w.tolist(), strict=True)
        ],
        "hoverinfo": "text",
        "name": t("fig.edges", lang),
        "showlegend": False,
    }


def _node_trace(pos: np.ndarray, m: np.ndarray, tokens: list[str], special: np.ndarray, lang: str) -> Json:
    """Token nodes, sized by the attention they receive; labelled outside the circle."""
    received = m.sum(axis=0)  # (n,) attention each token receives; rows sum to 1, so mean 1
    size = 8 + 12 * np.sqrt(received / max(float(received.max()), 1e-9))
    step = tick_step(len(tokens))
    return {
        "type": "scatter",
        "x": pos[:, 0].astype(np.float32),
        "y": pos[:, 1].astype(np.float32),
        "mode": "markers+text",
        "text": [tok if i % step == 0 else "" for i, tok in enumerate(tokens)],
        "textposition": [_outside(x, y) for x, y in pos],
        "cliponaxis": False,
        "marker": {
            "size": size.astype(np.float32),
            "color": [SPECIAL_COLOR if s else NODE_COLOR for s in special],
            "line": {"width": 0},
        },
        "customdata": [[i] for i in range(len(tokens))],
        "hovertext": [
            t("fig.hover_node", lang, token=tok, i=i, r=f"{r:.2f}")
            for i, (tok, r) in enumerate(zip(tokens, received.tolist(), strict=True))
        ],
        "hoverinfo": "text",
        "name": t("fig.tokens", lang),
        "showlegend": False,
    }


def _outside(x: float, y: float) -> str:
    """Text position that puts a label outside a circle at the point (x, y)."""
    if abs(x) > 0.05:
        return "middle right" if x > 0 else "middle left"
    return "top center" if y > 0 else "bottom center"
