"""Plotly figure builders: data in, `plotly.graph_objects.Figure` out. Never imports streamlit.

Conventions every view shares:
- Layers and heads are 0-indexed everywhere, in labels too ("layer 2, head 5"): the same numbers
  as `Attention.head(layer, head)` and the app's widgets.
- Tokens repeat ("the" twice) and Plotly merges equal category labels, so token axes use unique
  category keys ("the (5)", position 0-based) with the bare token as tick text (`_token_axis`).
  Tokens are escaped: Plotly reads "<s>" in a label as strike-through markup.
- No background, font or text colours are set: Streamlit's theme (light or dark) or the
  notebook's template decides. Line and marker colours are mid-tones readable on both.
- Numpy float32 arrays go to Plotly as they are: plotly >= 6 serialises them as base64 typed
  arrays ({"dtype": "f4", "bdata": ..., "shape": "n, n"}), 4 bytes a number (plotly/plotly.py#4470).
- The all-heads views draw one small image for all layers x heads (never 72 full heatmaps) and
  carry one scatter trace of near-invisible markers, one per (layer, head), with
  customdata [layer, head], so `st.plotly_chart(fig, on_select="rerun", selection_mode="points")`
  can report clicks; `model_view_pick` turns those points back into (layer, head).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import i18n
from .result import Attention

__all__ = [
    "DEFAULT_MAX_EDGES",
    "DEFAULT_MAX_LINKS",
    "MAX_TICK_LABELS",
    "cost_sweep",
    "graph_view",
    "head_label",
    "head_view",
    "heatmap",
    "layer_head_grid",
    "matrix",
    "model_view",
    "model_view_pick",
    "token_bars",
    "token_focus",
    "token_pick",
]

MAX_TICK_LABELS = 80  # beyond this many tokens, axes label every k-th token only
DEFAULT_MAX_LINKS = 4096  # head view: more lines than this are unreadable and slow to draw
DEFAULT_MAX_EDGES = 400  # graph view: strongest edges kept at large n
MIN_LINK_WEIGHT = 0.01  # head view: lighter links are not drawn (bertviz draws them at opacity < 0.01)
MASKED_BELOW = -1e4  # matrix: scores at or below this were masked (HF used -10000, others -1e9 or -inf)

SEQUENTIAL = "Viridis"  # perceptually uniform, readable on light and dark backgrounds
DIVERGING = "RdBu_r"
HEAD_COLORS = ("#636EFA", "#EF553B", "#00CC96", "#AB63FA", "#FFA15A", "#19D3F3", "#FF6692", "#B6E880", "#FF97FF", "#FECB52", "#8C564B", "#BCBD22")  # fmt: skip
EDGE_COLOR = "#636EFA"
NODE_COLOR = "#636EFA"
SPECIAL_COLOR = "#FFA15A"
FOCUS_COLOR = "#EF553B"
PICK_TRACE = "pick"  # name of the clickable-marker trace

# Head view: a link of weight w is drawn at the opacity of the highest level w reaches.
# Opacity tracks the weight, lifted at the bottom so a 0.05 link is still faintly visible.
LINK_LEVELS = ((MIN_LINK_WEIGHT, 0.06), (0.05, 0.12), (0.1, 0.25), (0.2, 0.45), (0.4, 0.7), (0.7, 1.0))
# Graph view: (lowest weight, line width in px).
EDGE_WIDTHS = ((0.0, 1.0), (0.2, 2.0), (0.4, 3.5), (0.7, 5.0))


def head_label(layer: int, head: int) -> str:
    """The label every view uses for one head: 0-indexed, like the widgets."""
    return f"layer {layer}, head {head}"


# ---------------------------------------------------------------------------------------------
# Shared helpers


def _escape(token: str) -> str:
    return token.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _tick_step(n: int, max_labels: int = MAX_TICK_LABELS) -> int:
    return 1 if n <= max_labels else math.ceil(n / (max_labels // 2))


def _token_axis(tokens: Sequence[str]) -> tuple[list[str], dict[str, Any]]:
    """Unique category keys for a token axis, and the axis settings that label it with tokens.

    Keys are "token (i)", so repeated tokens stay separate rows and hover still names the token;
    tick text is the bare token, thinned to every k-th beyond MAX_TICK_LABELS tokens.
    """
    shown = [_escape(t) for t in tokens]
    keys = [f"{s} ({i})" for i, s in enumerate(shown)]
    step = _tick_step(len(keys))
    axis = {
        "type": "category",
        "categoryorder": "array",
        "categoryarray": keys,
        "tickmode": "array",
        "tickvals": keys[::step],
        "ticktext": shown[::step],
        "showgrid": False,
    }
    return keys, axis


def _colour(values: np.ndarray, zmin: float | None, zmax: float | None) -> dict[str, Any]:
    """Sequential scale for non-negative data, diverging around 0 otherwise; the range follows the
    data unless zmin and zmax are both given (Plotly ignores a lone bound)."""
    finite = values[np.isfinite(values)]
    if finite.size and finite.min() < 0:
        return {"colorscale": DIVERGING, "zmid": 0.0, "zmin": zmin, "zmax": zmax}
    return {"colorscale": SEQUENTIAL, "zmin": zmin, "zmax": zmax}


def _grid_axes(fig: go.Figure, n_layers: int, n_heads: int, *, square: bool) -> None:
    """Head across, layer down (layer 0 at the top), one unit a cell centred on (head, layer)."""
    common = {"showgrid": False, "zeroline": False, "tickmode": "array", "ticks": ""}
    fig.update_xaxes(
        title_text="head",
        range=[-0.5, n_heads - 0.5],
        tickvals=list(range(n_heads)),
        ticktext=[str(h) for h in range(n_heads)],
        **common,
    )
    fig.update_yaxes(
        title_text="layer",
        range=[n_layers - 0.5, -0.5],
        tickvals=list(range(n_layers)),
        ticktext=[str(layer) for layer in range(n_layers)],
        **common,
    )
    if square:
        fig.update_yaxes(scaleanchor="x", scaleratio=1, constrain="domain")
        fig.update_xaxes(constrain="domain")


def _add_pick_markers(fig: go.Figure, n_layers: int, n_heads: int, hovertext: Sequence[str]) -> None:
    """One near-invisible marker at each cell centre carrying customdata [layer, head].

    Streamlit's point selection reports scatter points reliably (heatmaps are not selectable in
    plotly.js). customdata is a plain list, not a numpy array: plotly >= 6 would send an array
    as a base64 typed array, and click/selection events then lose or mangle it
    (plotly/plotly.py#5119, plotly/plotly.js#7375). hoverdistance=-1 makes the nearest centre
    win everywhere, so a click anywhere inside a cell picks that cell.
    """
    cells = [[layer, head] for layer in range(n_layers) for head in range(n_heads)]
    fig.add_trace(
        go.Scatter(
            x=[c[1] for c in cells],
            y=[c[0] for c in cells],
            customdata=cells,
            mode="markers",
            marker={"size": 14, "symbol": "square", "opacity": 0.01, "color": "gray"},
            hovertext=list(hovertext),
            hoverinfo="text",
            name=PICK_TRACE,
            showlegend=False,
        )
    )
    fig.update_layout(hovermode="closest", hoverdistance=-1, clickmode="event+select")


def _points(selection: Any) -> list[Mapping[str, Any]]:
    """Accept the event Streamlit returns, its .selection, or the list of points itself."""
    if selection is None:
        return []
    if isinstance(selection, Mapping):
        if "selection" in selection:
            return _points(selection["selection"])
        return list(selection.get("points", []))
    return [p for p in selection if isinstance(p, Mapping)]


def _ints(customdata: Any, size: int) -> tuple[int, ...] | None:
    """customdata as `size` ints, whether it arrives as a JSON list or, had it been sent as a typed
    array, as an object {"0": a, "1": b} (JSON.stringify of a typed array)."""
    if isinstance(customdata, Mapping):
        customdata = [customdata.get(str(k)) for k in range(len(customdata))]
    if not isinstance(customdata, (list, tuple)) or len(customdata) != size:
        return None
    out = []
    for v in customdata:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not float(v).is_integer():
            return None
        out.append(int(v))
    return tuple(out)


def model_view_pick(selection_points: Any) -> tuple[int, int] | None:
    """(layer, head) of the first selected cell of `model_view` or `layer_head_grid`, else None.

    Pass `event.selection["points"]` from `st.plotly_chart(..., on_select="rerun",
    selection_mode="points")` (the event or `event.selection` work too). Each point is a dict
    such as {"curve_number": 1, "point_number": 17, "point_index": 17, "x": 5, "y": 1,
    "customdata": [1, 5]}; points without a [layer, head] customdata are skipped.
    """
    for point in _points(selection_points):
        cell = _ints(point.get("customdata"), 2)
        if cell is not None:
            return cell[0], cell[1]
    return None


def token_pick(selection_points: Any) -> int | None:
    """Token index of the first selected token marker of `head_view` or `graph_view`, else None."""
    for point in _points(selection_points):
        token = _ints(point.get("customdata"), 1)
        if token is not None:
            return token[0]
    return None


def _segments(x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Straight segments as one polyline broken by NaN (float32), so one trace draws them all.

    NaN in a typed array breaks a Plotly line as None does in a list (checked in Chromium with
    the plotly.js that plotly 7.1 bundles), and arrays validate far faster than long lists.
    """
    return _polylines(np.column_stack([x0, x1]), np.column_stack([y0, y1]))


def _polylines(xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(m, k) point rows -> one NaN-broken float32 polyline each for x and y."""

    def gaps(a: np.ndarray) -> np.ndarray:
        out = np.full((a.shape[0], a.shape[1] + 1), np.nan, dtype=np.float32)
        out[:, :-1] = a
        return out.ravel()

    return gaps(xs), gaps(ys)


def _level(weights: np.ndarray, levels: Sequence[tuple[float, float]]) -> np.ndarray:
    """Index of the highest level whose lower bound each weight reaches."""
    return np.searchsorted([lo for lo, _ in levels], weights, side="right") - 1


def _outside(x: float, y: float) -> str:
    """Text position that puts a label outside a circle at the point (x, y)."""
    if abs(x) > 0.05:
        return "middle right" if x > 0 else "middle left"
    return "top center" if y > 0 else "bottom center"


def _title(text: str, note: str | None = None) -> dict[str, Any]:
    return {"text": text if note is None else f"{text}<br><sup>{note}</sup>"}


def _block_mean(weights: np.ndarray, size: int) -> np.ndarray:
    """(..., n, n) -> (..., t, t) with t = min(n, size): each cell the mean of its block.

    Blocks are as equal as n allows (sizes differ by at most one); float64 sums, float32 out.
    One (n, n) map at a time: a float64 copy of all 72 maps at 512 tokens would be 150 MB.
    """
    n = weights.shape[-1]
    if n <= size:
        return weights.astype(np.float32, copy=False)
    starts = (np.arange(size) * n) // size
    counts = np.diff(np.append(starts, n)).astype(np.float64)
    maps = weights.reshape(-1, n, n)
    out = np.empty((len(maps), size, size), dtype=np.float32)
    for k, m in enumerate(maps):
        rows = np.add.reduceat(m, starts, axis=0, dtype=np.float64)  # (t, n)
        out[k] = np.add.reduceat(rows, starts, axis=1) / np.outer(counts, counts)  # (t, t)
    return out.reshape(*weights.shape[:-2], size, size)


# ---------------------------------------------------------------------------------------------
# One head


def heatmap(
    att: Attention, layer: int = 0, head: int | None = 0, *, zmax: float | None = None, title: str | None = None
) -> go.Figure:
    """One head's (n, n) map at full resolution (head=None: the mean of the layer's heads).

    Query tokens down the side (row 0 at the top), key tokens across. z is `att.head(layer, head)`
    itself (float32). zmax=None lets the colour range follow the data; a float fixes it to [0, zmax].
    """
    z = att.head(layer, head)  # (n, n), row i = query i
    keys, axis = _token_axis(att.tokens)
    trace = go.Heatmap(
        z=z,
        x=keys,
        y=keys,
        colorscale=SEQUENTIAL,
        zmin=None if zmax is None else 0.0,
        zmax=None if zmax is None else float(zmax),
        zauto=zmax is None,
        colorbar={"title": {"text": "weight"}},
        hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.6f}<extra></extra>",
    )
    if title is None:
        which = f"mean of {att.n_heads} heads" if head is None else f"head {head}"
        title = f"layer {layer}, {which}"
    n = att.n
    fig = go.Figure(trace)
    fig.update_layout(title=_title(title), height=int(np.clip(260 + 16 * n, 460, 860)))
    fig.update_xaxes(axis, title_text="key (attended to)", constrain="domain")
    fig.update_yaxes(axis, title_text="query (attending)", autorange="reversed", scaleanchor="x", constrain="domain")
    return fig


# ---------------------------------------------------------------------------------------------
# All heads


def model_view(att: Attention, focus: tuple[int, int] | None = None, thumb: int = 32) -> go.Figure:
    """Every layer x head in one figure: a mosaic of thumbnails, layer down, head across.

    Each map is block-averaged to at most `thumb` x `thumb`, and all thumbnails share one image
    (one heatmap trace, NaN between cells), so 72 heads at 512 tokens stay a few hundred kB.
    `focus=(layer, head)` outlines that cell. Cells are clickable (see `model_view_pick`).
    layout.meta holds {"thumb": t, "gap": g}: thumbnail (l, h) is
    z[l*(t+g) : l*(t+g)+t, h*(t+g) : h*(t+g)+t].
    """
    n_layers, n_heads, n = att.n_layers, att.n_heads, att.n
    if thumb < 1:
        raise ValueError("thumb must be at least 1")
    thumbs = _block_mean(att.weights, thumb)  # (L, H, t, t)
    t = thumbs.shape[-1]
    gap = max(1, t // 10)
    step = t + gap
    padded = np.full((n_layers, n_heads, step, step), np.nan, dtype=np.float32)
    padded[:, :, :t, :t] = thumbs
    mosaic = padded.transpose(0, 2, 1, 3).reshape(n_layers * step, n_heads * step)[:-gap, :-gap]

    # Pixel p of the mosaic sits at p*dx + origin; cell (l, h) spans [h-0.5, h+0.5] x [l-0.5, l+0.5].
    d = 1.0 / step
    origin = -0.5 + (gap / 2 + 0.5) * d
    cmax = float(np.quantile(thumbs, 0.99)) or 1.0  # a few sink cells should not wash out the rest
    fig = go.Figure(
        go.Heatmap(
            z=mosaic,
            x0=origin,
            dx=d,
            y0=origin,
            dy=d,
            colorscale=SEQUENTIAL,
            zmin=0.0,
            zmax=cmax,
            colorbar={"title": {"text": "mean weight"}},
            hoverinfo="skip",
        )
    )
    received = att.weights.mean(axis=2)  # (L, H, n): average attention each key token gets
    top = received.argmax(axis=-1)
    tokens = [_escape(tok) for tok in att.tokens]
    hover = [
        f"{head_label(layer, head)}<br>looks most at {tokens[top[layer, head]]} ({top[layer, head]}),"
        f" {received[layer, head, top[layer, head]]:.2f} on average<br>click to focus"
        for layer in range(n_layers)
        for head in range(n_heads)
    ]
    _grid_axes(fig, n_layers, n_heads, square=True)
    _add_pick_markers(fig, n_layers, n_heads, hover)
    if focus is not None:
        layer, head = int(focus[0]), int(focus[1])
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise IndexError(f"focus {focus} outside {n_layers} layers x {n_heads} heads")
        fig.add_shape(
            type="rect",
            x0=head - 0.5,
            x1=head + 0.5,
            y0=layer - 0.5,
            y1=layer + 0.5,
            line={"color": FOCUS_COLOR, "width": 3},
        )
    shrunk = "" if t == n else f", each averaged down to {t}x{t}"
    fig.update_layout(
        title=_title(f"All {n_layers} layers x {n_heads} heads ({n} tokens{shrunk})", "click a head to focus on it"),
        height=120 + 70 * n_layers,
        meta={"thumb": t, "gap": gap},
    )
    return fig


def layer_head_grid(
    values: np.ndarray,
    title: str | None = None,
    labels: np.ndarray | Sequence[Sequence[str]] | None = None,
    zmin: float | None = None,
    zmax: float | None = None,
) -> go.Figure:
    """A (layers, heads) grid of numbers as a heatmap, with optional text in each cell.

    Cells are clickable like the model view's (`model_view_pick` reads them).
    """
    z = np.asarray(values, dtype=np.float64)
    if z.ndim != 2:
        raise ValueError(f"values must have shape (layers, heads), got {z.shape}")
    n_layers, n_heads = z.shape
    text = None if labels is None else np.asarray(labels, dtype=str)
    if text is not None and text.shape != z.shape:
        raise ValueError(f"labels have shape {text.shape}, values {z.shape}")
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x0=0,
            dx=1,
            y0=0,
            dy=1,
            text=None if text is None else text.tolist(),
            texttemplate=None if text is None else "%{text}",
            hoverinfo="skip",
            **_colour(z, zmin, zmax),
        )
    )
    hover = [
        f"{head_label(layer, head)}: {z[layer, head]:.4g}" + ("" if text is None else f" ({text[layer, head]})")
        for layer in range(n_layers)
        for head in range(n_heads)
    ]
    _grid_axes(fig, n_layers, n_heads, square=False)
    _add_pick_markers(fig, n_layers, n_heads, hover)
    fig.update_layout(title=_title(title or ""), height=120 + 40 * n_layers)
    return fig


def token_focus(
    att: Attention, query: int, key: int, top: int | None = None, *, lang: str = i18n.DEFAULT_LANGUAGE
) -> go.Figure:
    """Every (layer, head) ranked by how much `query` attends to `key`, strongest at the top.

    "Which heads link 'it' to 'animal'?" Bars carry customdata [layer, head] (clickable).
    A dotted line marks 1/n, what a head that looks everywhere equally would give.
    """
    n = att.n
    if not (0 <= query < n and 0 <= key < n):
        raise IndexError(f"query {query} / key {key} outside 0..{n - 1}")
    flat = att.weights[:, :, query, key].ravel()  # (L*H,)
    order = np.argsort(-flat, kind="stable")
    if top is not None:
        order = order[: max(1, int(top))]
    layers, heads = np.divmod(order, att.n_heads)
    q, k = _escape(att.tokens[query]), _escape(att.tokens[key])
    fig = go.Figure(
        go.Bar(
            x=flat[order],
            y=[head_label(int(layer), int(head)) for layer, head in zip(layers, heads, strict=True)],
            orientation="h",
            customdata=[[int(layer), int(head)] for layer, head in zip(layers, heads, strict=True)],
            marker_color=EDGE_COLOR,
            hovertemplate="%{y}: %{x:.4f}<extra></extra>",
        )
    )
    fig.add_vline(x=1.0 / n, line_dash="dot", annotation_text=i18n.t("fig.uniform", lang), annotation_position="top")
    shown = (
        i18n.t("fig.all_heads", lang) if top is None else i18n.t("fig.top_heads", lang, k=len(order), total=flat.size)
    )
    fig.update_layout(
        title=_title(
            f"Which heads link {q} ({query}) to {k} ({key})?", i18n.t("fig.note_focus", lang, q=q, k=k, shown=shown)
        ),
        height=140 + 18 * len(order),
        clickmode="event+select",
    )
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(title_text="attention weight", rangemode="tozero")
    return fig


# ---------------------------------------------------------------------------------------------
# Token-to-token views


def head_view(
    att: Attention,
    layer: int = 0,
    heads: Sequence[int] | None = None,
    highlight: int | None = None,
    max_links: int | None = None,
    *,
    lang: str = i18n.DEFAULT_LANGUAGE,
) -> go.Figure:
    """bertviz-style head view: queries on the left, keys on the right, a line per (i, j).

    Line opacity follows the weight (binned into LINK_LEVELS: one trace per head and level, since
    a Plotly trace has one opacity); each head has its own colour and legend entry.
    heads=None draws every head of the layer; highlight=i draws only query i's lines. Links
    lighter than MIN_LINK_WEIGHT are not drawn. When heads x queries x n would exceed
    `max_links` (DEFAULT_MAX_LINKS when None), only the k strongest links of each query token
    are kept, and the title says so.
    """
    n, n_heads = att.n, att.n_heads
    if not 0 <= layer < att.n_layers:
        raise IndexError(f"layer {layer} out of range 0..{att.n_layers - 1}")
    heads = list(range(n_heads)) if heads is None else [int(h) for h in heads]
    for h in heads:
        if not 0 <= h < n_heads:
            raise IndexError(f"head {h} out of range 0..{n_heads - 1}")
    if highlight is not None and not 0 <= highlight < n:
        raise IndexError(f"highlight {highlight} out of range 0..{n - 1}")
    queries = np.arange(n) if highlight is None else np.array([highlight])
    budget = DEFAULT_MAX_LINKS if max_links is None else max(1, int(max_links))
    per_query = n
    if len(heads) * len(queries) * n > budget:
        per_query = max(1, budget // max(1, len(heads) * len(queries)))

    traces: list[dict[str, Any]] = []
    for colour_index, h in enumerate(heads):
        sub = att.weights[layer, h][queries]  # (q, n)
        if per_query < n:
            keys = np.argpartition(-sub, per_query - 1, axis=1)[:, :per_query]  # (q, k)
        else:
            keys = np.broadcast_to(np.arange(n), sub.shape)
        w = np.take_along_axis(sub, keys, axis=1).ravel()
        src = np.repeat(queries, keys.shape[1])
        dst = keys.ravel()
        keep = w >= MIN_LINK_WEIGHT
        src, dst, w = src[keep], dst[keep], w[keep]
        level = _level(w, LINK_LEVELS)
        colour = HEAD_COLORS[colour_index % len(HEAD_COLORS)]
        strongest = int(level.max()) if level.size else -1  # its trace carries the legend entry
        for index, (_, opacity) in enumerate(LINK_LEVELS):
            sel = level == index
            if not sel.any():
                continue
            xs, ys = _segments(np.zeros(sel.sum()), src[sel], np.ones(sel.sum()), dst[sel])
            traces.append(
                {
                    "type": "scatter",
                    "x": xs,
                    "y": ys,
                    "mode": "lines",
                    "line": {"color": colour, "width": 1.5},
                    "opacity": opacity,
                    "hoverinfo": "skip",
                    "name": i18n.t("fig.head_n", lang, h=h),
                    "legendgroup": f"head {h}",
                    "showlegend": index == strongest,
                }
            )

    tokens = [_escape(tok) for tok in att.tokens]
    step = _tick_step(n)
    shown = [tok if i % step == 0 or i == highlight else "" for i, tok in enumerate(tokens)]
    if highlight is not None:
        shown[highlight] = f"<b>{shown[highlight]}</b>"
    for x, side, position in ((0, "query", "middle left"), (1, "key", "middle right")):
        traces.append(
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
                "hovertext": [f"{side} {tok} ({i})" for i, tok in enumerate(tokens)],
                "hoverinfo": "text",
                "name": side,
                "showlegend": False,
            }
        )

    if len(heads) == n_heads:
        which = "all heads"
    else:
        which = ("head " if len(heads) == 1 else "heads ") + ", ".join(map(str, heads))
    note = i18n.t("fig.note_head_view", lang)
    if per_query < n:
        note = i18n.t("fig.note_links_capped", lang, k=per_query, n=n)
    title = f"layer {layer}, {which}" + (
        "" if highlight is None else f": what {tokens[highlight]} ({highlight}) looks at"
    )
    fig = go.Figure(traces)
    fig.update_layout(
        title=_title(title, note),
        height=int(np.clip(120 + 22 * n, 420, 1400)),
        hovermode="closest",
        margin={"l": 110, "r": 110},
        legend={"title": {"text": "head"}},
    )
    fig.update_xaxes(visible=False, range=[-0.35, 1.35], fixedrange=True)
    fig.update_yaxes(visible=False, range=[n - 0.5, -0.5])
    return fig


def graph_view(
    att: Attention,
    layer: int = 0,
    head: int | None = 0,
    threshold: float = 0.1,
    max_edges: int | None = None,
    *,
    lang: str = i18n.DEFAULT_LANGUAGE,
) -> go.Figure:
    """Attention as a directed graph: tokens on a circle (clockwise from the top, in order),
    an edge i -> j wherever query i gives key j more than `threshold` (self-attention as a small
    loop). Width grows with the weight (binned EDGE_WIDTHS); an arrow head near the key end
    shows the direction and, on hover, the weight, and carries customdata [i, j]. Node size
    grows with the attention a token receives. head=None: the mean of the layer's heads.
    More than `max_edges` (DEFAULT_MAX_EDGES when None) edges: the strongest are kept, and the
    title says so.
    """
    m = att.head(layer, head)  # (n, n)
    n = att.n
    src, dst = np.nonzero(m > threshold)
    w = m[src, dst]
    order = np.argsort(-w, kind="stable")
    cap = DEFAULT_MAX_EDGES if max_edges is None else max(0, int(max_edges))
    total = len(order)
    order = order[:cap]
    src, dst, w = src[order], dst[order], w[order]

    angle = np.pi / 2 - 2 * np.pi * np.arange(n) / n
    pos = np.column_stack([np.cos(angle), np.sin(angle)])  # (n, 2) on the unit circle
    loop = 0.09  # self-loop radius, in units of the circle's radius
    offset = min(0.025, 0.5 * np.sin(np.pi / max(n, 2)))  # i->j and j->i run side by side

    start, end = pos[src].copy(), pos[dst].copy()
    ordinary = src != dst
    direction = end - start
    length = np.linalg.norm(direction, axis=1, keepdims=True)
    unit = np.divide(direction, length, out=np.zeros_like(direction), where=length > 0)
    right = np.column_stack([unit[:, 1], -unit[:, 0]])
    start[ordinary] += offset * right[ordinary]
    end[ordinary] += offset * right[ordinary]
    arrow = start + 0.8 * (end - start)
    heading = unit.copy()
    # A self-loop is a small circle just inside its node (the label sits outside); the arrow
    # sits on its far side.
    centre = pos[src[~ordinary]] * (1 - loop)
    outward = pos[src[~ordinary]]
    arrow[~ordinary] = centre - loop * outward
    heading[~ordinary] = np.column_stack([outward[:, 1], -outward[:, 0]])

    traces: list[dict[str, Any]] = []
    ring = np.linspace(0, 2 * np.pi, 17)
    width_level = _level(w, EDGE_WIDTHS)
    for index, (lo, width) in enumerate(EDGE_WIDTHS):
        sel_line = (width_level == index) & ordinary
        sel_loop = (width_level == index) & ~ordinary
        if not (sel_line.any() or sel_loop.any()):
            continue
        lx, ly = _segments(start[sel_line, 0], start[sel_line, 1], end[sel_line, 0], end[sel_line, 1])
        centres = pos[src[sel_loop]] * (1 - loop)  # (loops, 2)
        cx, cy = _polylines(centres[:, :1] + loop * np.cos(ring), centres[:, 1:] + loop * np.sin(ring))
        hi = next((h for h, _ in EDGE_WIDTHS[index + 1 :]), None)
        traces.append(
            {
                "type": "scatter",
                "x": np.concatenate([lx, cx]),
                "y": np.concatenate([ly, cy]),
                "mode": "lines",
                "line": {"color": EDGE_COLOR, "width": width},
                "opacity": 0.65,
                "hoverinfo": "skip",
                "name": i18n.t("fig.weight_above", lang, lo=f"{max(lo, threshold):.2g}")
                if hi is None
                else i18n.t("fig.weight_range", lang, lo=f"{max(lo, threshold):.2g}", hi=f"{hi:.2g}"),
            }
        )

    tokens = [_escape(tok) for tok in att.tokens]
    traces.append(
        {
            "type": "scatter",
            "x": arrow[:, 0].astype(np.float32),
            "y": arrow[:, 1].astype(np.float32),
            "mode": "markers",
            "marker": {
                "symbol": "arrow",
                "size": 10,
                "color": EDGE_COLOR,
                # arrow points up at angle 0 and turns clockwise: heading (dx, dy) is atan2(dx, dy)
                "angle": np.degrees(np.arctan2(heading[:, 0], heading[:, 1])).astype(np.float32),
            },
            "customdata": [[int(i), int(j)] for i, j in zip(src, dst, strict=True)],
            "hovertext": [
                f"{tokens[i]} ({i}) → {tokens[j]} ({j}): {wt:.4f}"
                for i, j, wt in zip(src.tolist(), dst.tolist(), w.tolist(), strict=True)
            ],
            "hoverinfo": "text",
            "name": "edges",
            "showlegend": False,
        }
    )

    received = m.sum(axis=0)  # (n,) attention each token receives; rows sum to 1, so mean 1
    size = 8 + 12 * np.sqrt(received / max(float(received.max()), 1e-9))
    step = _tick_step(n)
    label = [tok if i % step == 0 else "" for i, tok in enumerate(tokens)]
    traces.append(
        {
            "type": "scatter",
            "x": pos[:, 0].astype(np.float32),
            "y": pos[:, 1].astype(np.float32),
            "mode": "markers+text",
            "text": label,
            "textposition": [_outside(x, y) for x, y in pos],
            "cliponaxis": False,
            "marker": {
                "size": size.astype(np.float32),
                "color": [SPECIAL_COLOR if s else NODE_COLOR for s in att.special],
                "line": {"width": 0},
            },
            "customdata": [[i] for i in range(n)],
            "hovertext": [f"{tok} ({i})<br>receives {received[i]:.2f} in total" for i, tok in enumerate(tokens)],
            "hoverinfo": "text",
            "name": "tokens",
            "showlegend": False,
        }
    )

    which = f"mean of {att.n_heads} heads" if head is None else f"head {head}"
    note = i18n.t("fig.note_edge", lang, t=f"{threshold:g}")
    if total > len(order):
        note = i18n.t("fig.note_edges_capped", lang, k=len(order), total=total, t=f"{threshold:g}")
    elif total == 0:
        note = i18n.t("fig.note_no_edges", lang, t=f"{threshold:g}")
    fig = go.Figure(traces)
    fig.update_layout(
        title=_title(f"layer {layer}, {which} as a graph", note),
        height=620,
        hovermode="closest",
        legend={"title": {"text": "edge weight"}},
    )
    fig.update_xaxes(visible=False, range=[-1.4, 1.4])
    fig.update_yaxes(visible=False, range=[-1.3, 1.3], scaleanchor="x", scaleratio=1)
    return fig


def token_bars(
    tokens: Sequence[str],
    series: Mapping[str, np.ndarray],
    title: str | None = None,
    highlight: int | None = None,
) -> go.Figure:
    """Grouped bars over the tokens, one series per method (raw attention, rollout, flow, ...).

    `highlight=i` shades token i (the query being explained, say).
    """
    keys, axis = _token_axis(tokens)
    fig = go.Figure()
    for name, values in series.items():
        y = np.asarray(values)
        if y.shape != (len(keys),):
            raise ValueError(f"series {name!r} has shape {y.shape}, expected ({len(keys)},)")
        fig.add_trace(go.Bar(x=keys, y=y, name=name, hovertemplate="%{x}: %{y:.4f}"))
    if highlight is not None:
        if not 0 <= highlight < len(keys):
            raise IndexError(f"highlight {highlight} out of range 0..{len(keys) - 1}")
        fig.add_vrect(
            x0=highlight - 0.5, x1=highlight + 0.5, fillcolor="gray", opacity=0.2, line_width=0, layer="below"
        )
    fig.update_layout(title=_title(title or ""), barmode="group", height=380, legend={"orientation": "h", "y": -0.25})
    fig.update_xaxes(axis)
    return fig


# ---------------------------------------------------------------------------------------------
# Lab and cost panel


def matrix(
    values: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    title: str | None = None,
    fmt: str = ".2f",
) -> go.Figure:
    """A small labelled matrix with its numbers in the cells (Q, K, QK^T, scaled, softmax, ...).

    Masked cells (-inf, or at or below MASKED_BELOW such as -1e9) show "-inf" on the page
    background instead of a colour that would swamp the scale.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 1:
        v = v[None, :]
    if v.shape != (len(row_labels), len(col_labels)):
        raise ValueError(f"values have shape {v.shape}, labels give ({len(row_labels)}, {len(col_labels)})")
    masked = (v <= MASKED_BELOW) | (np.isinf(v) & (v < 0))
    z = np.where(masked, np.nan, v)
    text = [["" if masked[i, j] or np.isnan(v[i, j]) else format(v[i, j], fmt) for j in range(v.shape[1])] for i in range(v.shape[0])]  # fmt: skip
    rows, row_axis = _token_axis(row_labels)
    cols, col_axis = _token_axis(col_labels)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=cols,
            y=rows,
            text=text,
            texttemplate="%{text}",
            hovertemplate="%{y}, %{x}: %{z:.4g}<extra></extra>",
            showscale=False,
            xgap=1,
            ygap=1,
            **_colour(z, None, None),
        )
    )
    mi, mj = np.nonzero(masked)
    if mi.size:
        # Drawn as text on the background: a NaN cell is a gap, whatever a heatmap does with its text.
        fig.add_trace(
            go.Scatter(
                x=[cols[j] for j in mj],
                y=[rows[i] for i in mi],
                mode="text",
                text=["-inf"] * mi.size,
                hovertext=[f"{rows[i]}, {cols[j]}: masked (-inf)" for i, j in zip(mi, mj, strict=True)],
                hoverinfo="text",
                name="masked",
                showlegend=False,
            )
        )
    fig.update_layout(title=_title(title or ""), height=int(np.clip(130 + 34 * len(rows), 260, 860)))
    fig.update_xaxes(col_axis, side="top")
    fig.update_yaxes(row_axis, autorange="reversed")
    return fig


def cost_sweep(rows: Sequence[Mapping[str, float]]) -> go.Figure:
    """Time and memory against sequence length on log-log axes, each with an n^2 reference line.

    rows: dicts with "n", "forward_s", "figures_s", "mb" (any of the last three may be missing).
    The dotted n^2 line passes through the largest measurement: parallel lines mean O(n^2).
    """
    data = sorted(rows, key=lambda r: r["n"])
    n = np.array([r["n"] for r in data], dtype=float)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("time (s)", "memory (MB)"))
    panels = ((1, (("forward_s", "model forward"), ("figures_s", "figures"))), (2, (("mb", "memory"),)))
    for col, names in panels:
        anchor = 0.0  # the n^2 line goes through the largest value at the largest n
        for key, label in names:
            y = np.array([r.get(key, np.nan) for r in data], dtype=float)
            if np.isnan(y).all():
                continue
            fig.add_trace(go.Scatter(x=n.tolist(), y=y.tolist(), mode="lines+markers", name=label), row=1, col=col)
            if np.isfinite(y[-1]):
                anchor = max(anchor, float(y[-1]))
        if anchor > 0:
            fig.add_trace(
                go.Scatter(
                    x=n.tolist(),
                    y=(anchor * (n / n[-1]) ** 2).tolist(),
                    mode="lines",
                    line={"dash": "dot", "color": "gray"},
                    name="∝ n²",
                    showlegend=col == 1,
                    legendgroup="n2",
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(type="log", title_text="tokens n")
    fig.update_yaxes(type="log")
    fig.update_layout(title=_title("Cost grows with the square of the length"), height=400)
    return fig
