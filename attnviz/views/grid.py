"""All heads at once: every layer x head as one mosaic of thumbnails (`model_view`) and a
(layers, heads) grid of numbers (`layer_head_grid`). Head across, layer down, both clickable.
One small image, never 72 full heatmaps (about 100 MB of JSON at 512 tokens).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ..result import Attention
from ._base import (
    BAR_ROOM_PX,
    FOCUS_COLOR,
    SEQUENTIAL,
    Json,
    colorbar_under,
    colour,
    escape,
    figure,
    head_label,
    layout_title,
)
from .margins import fit_margins
from .pick import PICK_LAYOUT, pick_markers


def model_view(
    att: Attention,
    focus: tuple[int, int] | None = None,
    thumb: int = 32,
    *,
    title: str | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Every layer x head in one figure: each map block-averaged to at most `thumb` x `thumb`, all
    in one heatmap trace (NaN between cells). `focus=(layer, head)` outlines that cell.
    layout.meta holds {"thumb": t, "gap": g}: thumbnail (l, h) is
    z[l*(t+g) : l*(t+g)+t, h*(t+g) : h*(t+g)+t]. `title` replaces the heading, not the note.
    """
    n_layers, n_heads = att.n_layers, att.n_heads
    trace, size, gap, heading = mosaic(att, focus, thumb, lang)
    data = [trace, pick_markers(n_layers, n_heads, cell_hovers(att, lang), lang)]
    title = heading if title is None else title
    layout = _grid_layout(n_layers, n_heads, lang, square=True) | {
        "title": layout_title(title, t("fig.note_click_head", lang)),
        "height": grid_height(n_layers),
        "meta": {"thumb": size, "gap": gap},
    }
    if focus is not None:
        layer, head = int(focus[0]), int(focus[1])
        outline = {"color": FOCUS_COLOR, "width": 3}
        layout["shapes"] = [
            {"type": "rect", "x0": head - 0.5, "x1": head + 0.5, "y0": layer - 0.5, "y1": layer + 0.5, "line": outline}
        ]
    return figure(data, layout)


def grid_height(n_layers: int) -> int:
    """`model_view`'s height in css px: a heading and axes, and 70 px a layer."""
    return 120 + 70 * n_layers


def mosaic(att: Attention, focus: tuple[int, int] | None, thumb: int, lang: str) -> tuple[Json, int, int, str]:
    """`model_view`'s picture before Plotly (also the canvas grid's): the mosaic trace, the
    thumbnail size, the gap between thumbnails and the heading. The trace is one heatmap, `gap`
    NaN pixels between thumbnails; pixel p sits at p*dx + origin, so cell (l, h) spans
    [h-0.5, h+0.5] x [l-0.5, l+0.5]."""
    n_layers, n_heads = att.n_layers, att.n_heads
    if thumb < 1:
        raise ValueError("thumb must be at least 1")
    if focus is not None and not (0 <= focus[0] < n_layers and 0 <= focus[1] < n_heads):
        raise IndexError(f"focus {focus} outside {n_layers} layers x {n_heads} heads")
    thumbs = block_mean(att.weights, thumb)  # (L, H, t, t); (L, H, t_q, t_k) for cross-attention
    tq, tk = thumbs.shape[-2:]
    size = max(tq, tk)  # a cross-attention thumbnail fills the top left of its square cell
    gap = max(1, size // 10)
    step = size + gap
    padded = np.full((n_layers, n_heads, step, step), np.nan, dtype=np.float32)
    padded[:, :, :tq, :tk] = thumbs
    z = padded.transpose(0, 2, 1, 3).reshape(n_layers * step, n_heads * step)[:-gap, :-gap]
    d = 1.0 / step
    origin = -0.5 + (gap / 2 + 0.5) * d
    trace = {
        "type": "heatmap",
        "z": z,
        "x0": origin,
        "dx": d,
        "y0": origin,
        "dy": d,
        "colorscale": SEQUENTIAL,
        "zmin": 0.0,
        "zmax": float(np.quantile(thumbs, 0.99)) or 1.0,  # a few sink cells should not wash out the rest
        "colorbar": colorbar_under(t("fig.mean_weight", lang)),
        "hoverinfo": "skip",
    }
    key = "fig.model_title" if size == max(att.n, att.n_keys) else "fig.model_title_shrunk"
    return trace, size, gap, t(key, lang, layers=n_layers, heads=n_heads, n=att.n, size=size)


def layer_head_grid(
    values: np.ndarray,
    title: str | None = None,
    labels: np.ndarray | Sequence[Sequence[str]] | None = None,
    zmin: float | None = None,
    zmax: float | None = None,
    *,
    note: str | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """A (layers, heads) grid of numbers as a heatmap, clickable, with optional text in each
    cell. `title`, its `note` and `labels` are the caller's words, shown as given."""
    z = np.array(values, dtype=np.float64)  # a copy: the figure must not alias the caller's array
    if z.ndim != 2:
        raise ValueError(f"values must have shape (layers, heads), got {z.shape}")
    text = None if labels is None else np.asarray(labels, dtype=str)
    if text is not None and text.shape != z.shape:
        raise ValueError(f"labels have shape {text.shape}, values {z.shape}")
    cells: list[str | None] = [None] * z.size if text is None else text.ravel().tolist()
    key = "fig.hover_value" if text is None else "fig.hover_value_note"
    hover = [
        t(key, lang, label=head_label(layer, head, lang=lang), value=f"{value:.4g}", note=note)
        for (layer, head), value, note in zip(np.ndindex(z.shape), z.ravel().tolist(), cells, strict=True)
    ]
    shown = {} if text is None else {"text": text.tolist(), "texttemplate": "%{text}"}
    layout = {"title": layout_title(title or "", note), "height": 120 + 40 * len(z)}
    return numbers_grid(z, shown | colour(z, zmin, zmax), hover, layout, lang)


def numbers_grid(z: np.ndarray, cells: Json, hover: list[str], layout: Json, lang: str) -> go.Figure:
    """A clickable (layers, heads) heatmap of `z`, cell (layer, head) centred on (head, layer):
    `cells` merged into its trace, each cell's `hover` on its pick marker, `layout` into the grid's."""
    n_layers, n_heads = z.shape
    trace = {"type": "heatmap", "z": z, "x0": 0, "dx": 1, "y0": 0, "dy": 1, "hoverinfo": "skip"} | cells
    data = [trace, pick_markers(n_layers, n_heads, hover, lang)]
    return figure(data, _grid_layout(n_layers, n_heads, lang, square=False) | layout)


def block_mean(weights: np.ndarray, size: int) -> np.ndarray:
    """(..., n_q, n_k) -> (..., min(n_q, size), min(n_k, size)): each cell the mean of its block,
    blocks as equal as n allows. Row blocks summed in float32 (a few rows each), column blocks in
    float64; float32 out, equal to 1e-6.
    """
    nq, nk = weights.shape[-2:]
    if nq <= size and nk <= size:
        return weights.astype(np.float32, copy=False)
    tq, tk = min(nq, size), min(nk, size)
    rs, cs = (np.arange(tq) * nq) // tq, (np.arange(tk) * nk) // tk
    maps = weights.reshape(-1, nq, nk)
    # rows (maps, t_q, n_k); equal blocks (512 tokens into 32) as contiguous sums, 10x faster than reduceat
    rows = maps.reshape(len(maps), tq, nq // tq, nk).sum(axis=2) if nq % tq == 0 else np.add.reduceat(maps, rs, axis=1)
    counts = np.outer(np.diff(np.append(rs, nq)), np.diff(np.append(cs, nk))).astype(np.float64)
    out = (np.add.reduceat(rows, cs, axis=2, dtype=np.float64) / counts).astype(np.float32)
    return out.reshape(*weights.shape[:-2], tq, tk)


def cell_hovers(att: Attention, lang: str) -> list[str]:
    """Per head, in pick-marker order: `fig.hover_model_cell`, naming the key token it looks at
    most on average (escaped) and that average weight."""
    received = att.weights.mean(axis=2)  # (L, H, n): average attention each key token gets
    return [
        t(
            "fig.hover_model_cell",
            lang,
            head=head_label(layer, head, lang=lang),
            token=escape(att.keys[k]),
            i=int(k),
            w=f"{float(received[layer, head, k]):.2f}",
        )
        for (layer, head), k in np.ndenumerate(received.argmax(axis=-1))
    ]


def _grid_layout(n_layers: int, n_heads: int, lang: str, *, square: bool) -> Json:
    """Head across, layer down (layer 0 at the top), one unit a cell centred on (head, layer)."""
    common = {"showgrid": False, "zeroline": False, "tickmode": "array", "ticks": ""}
    xaxis = common | {
        "title": {"text": t("fig.head", lang)},
        "range": [-0.5, n_heads - 0.5],
        "tickvals": list(range(n_heads)),
        "ticktext": [str(h) for h in range(n_heads)],
    }
    yaxis = common | {
        "title": {"text": t("fig.layer", lang)},
        "range": [n_layers - 0.5, -0.5],
        "tickvals": list(range(n_layers)),
        "ticktext": [str(layer) for layer in range(n_layers)],
    }
    if square:  # its colour bar lies under the grid (_base.colorbar_under)
        xaxis |= {"constrain": "domain"}
        yaxis |= {"scaleanchor": "x", "scaleratio": 1, "constrain": "domain"}
    return fit_margins(PICK_LAYOUT | {"xaxis": xaxis, "yaxis": yaxis}, below=BAR_ROOM_PX if square else 0)
