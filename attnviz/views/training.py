"""Figures of a training run: loss and accuracy (`training_curves`), every head's map on the probe
at each snapshot with a slider (`snapshot_grid`), and the head scores over time (`head_score_curves`);
the encoder-decoder run's alignment and exact match (`alignment_curves`: its cross-attention maps
are `heatmap`s of a rectangular `Attention`), and the digits ViT's class-token maps beside its image
(`class_token_maps`, `digit_panels`). Data in, figure out: no dependency on attnviz.training.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ..result import Attention
from ._base import HEAD_COLORS, SEQUENTIAL, Json, escape, figure, head_label, layout_title, panel_title, subplot
from .grid import block_mean

MAX_CURVE_POINTS = 400  # per-step training curves are averaged down to this many points
MAX_FRAMES = 40  # snapshots sent to the browser (evenly thinned, first and last kept)
MAX_CELLS = 8192  # numbers a frame may hold; beyond it every map is block-averaged
MAX_TICKS_N = 64  # token tick labels on the maps up to this many tokens (thinned to fit, see _tick_every)
MIN_TICK_PX = 11  # a tick label needs this many pixels of its map's side
TOP_PX, BOTTOM_PX, LABEL_PX = 110, 190, 34  # title, tick labels + slider + buttons, a head's label over its map
LIVE_BOTTOM_PX = 70  # tick labels alone (no slider while a run trains)
NOMINAL_PLOT_PX, GAP_PX = 840, 34  # the plot's width on a 1400 px page with the sidebar; between two maps
MAX_GRID_PX = 1600  # the maps' column at most this tall: many layers get smaller squares
SCORE_KEYS = {"previous": "train_fig.score_previous", "induction": "train_fig.score_induction", "diagonal": "train_fig.score_diagonal"}  # fmt: skip


def training_curves(
    history: np.ndarray | Sequence[Sequence[float]],
    held_out: np.ndarray | Sequence[Sequence[float]] | None = None,
    *,
    total_steps: int | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Loss (top) and accuracy (bottom) against the step. `history`: (k, 3) rows of (step, loss,
    accuracy), averaged down to MAX_CURVE_POINTS; `held_out`: (s, 3) rows at each snapshot, as
    markers. `total_steps` fixes the x range, so the curve grows towards its end."""
    h = np.asarray(history, dtype=np.float64).reshape(-1, 3)
    if len(h) > MAX_CURVE_POINTS:  # rows averaged in consecutive blocks
        edges = np.linspace(0, len(h), MAX_CURVE_POINTS + 1).astype(int)
        h = np.stack([h[a:b].mean(axis=0) for a, b in itertools.pairwise(edges)])
    hover = t("train_fig.hover_curve", lang, step="%{x}", value="%{y:.4f}") + "<extra></extra>"
    data: list[Json] = []
    for axis, col, key in (("y", 1, "train_fig.loss_train"), ("y2", 2, "train_fig.accuracy_train")):
        data.append({"type": "scatter", "mode": "lines", "x": h[:, 0], "y": h[:, col], "yaxis": axis,
                     "name": t(key, lang), "line": {"color": HEAD_COLORS[0], "width": 1.5}, "hovertemplate": hover,
                     "legendgroup": "train", "showlegend": col == 1})  # fmt: skip
    if held_out is not None and len(held_out):
        e = np.asarray(held_out, dtype=np.float64).reshape(-1, 3)
        for axis, col, key in (("y", 1, "train_fig.loss_held_out"), ("y2", 2, "train_fig.accuracy_held_out")):
            data.append({"type": "scatter", "mode": "markers+lines", "x": e[:, 0], "y": e[:, col], "yaxis": axis,
                         "name": t(key, lang), "marker": {"color": HEAD_COLORS[1], "size": 6},
                         "line": {"color": HEAD_COLORS[1], "width": 1, "dash": "dot"}, "hovertemplate": hover,
                         "legendgroup": "held_out", "showlegend": col == 1})  # fmt: skip
    xaxis: Json = {"title": {"text": t("train_fig.step", lang)}, "anchor": "y2"}
    if total_steps:
        xaxis["range"] = [0, int(total_steps)]
    layout: Json = {
        "title": layout_title(t("train_fig.curves_title", lang)),
        "height": 460,
        "xaxis": xaxis,
        "yaxis": {"domain": [0.55, 1.0], "title": {"text": t("train_fig.loss", lang)}, "rangemode": "tozero"},
        "yaxis2": {"domain": [0.0, 0.45], "title": {"text": t("train_fig.accuracy", lang)}, "range": [0, 1.02]}
        | {"tickformat": ".0%"},
        "legend": {"orientation": "h", "y": -0.2},
        "meta": {"points": len(h)},
    }
    return figure(data, layout)


def _domain(a: float, b: float) -> list[float]:
    """An axis domain inside [0, 1] (sums of floats land at -3e-17, which Plotly refuses)."""
    return [min(max(round(a, 6), 0.0), 1.0), min(max(round(b, 6), 0.0), 1.0)]


def panel_px(n_heads: int) -> int:
    """The side of one head's square map in px: as large as a 1,000 px page allows for this many
    heads across, so the probe's tokens stay readable."""
    return int(np.clip(NOMINAL_PLOT_PX // max(n_heads, 1) - GAP_PX, 150, 380))


def _grid_axes(
    n_layers: int, n_heads: int, side: int, ticks: Json, lang: str
) -> tuple[list[tuple[str, str]], Json, int]:
    """Axis names of each head's subplot (layer down, head across), the layout of their axes
    with each head's label over its map, and the figure's height: square maps (`scaleanchor`),
    each row `side` px plus its head labels; token `ticks` ({}: none) on the outer axes only."""
    plot_h = n_layers * side + (n_layers - 1) * LABEL_PX
    height = plot_h + TOP_PX + BOTTOM_PX
    vgap = LABEL_PX / plot_h  # room between rows for each head's label
    # boxes `side` px wide on a page of the usual width (fewer heads than fit: the rest is left empty)
    width, gap = side / NOMINAL_PLOT_PX, GAP_PX / NOMINAL_PLOT_PX
    shrink = min(1.0, 1 / (n_heads * width + (n_heads - 1) * gap))
    width, gap, h = width * shrink, gap * shrink, (1 - vgap * (n_layers - 1)) / n_layers
    names: list[tuple[str, str]] = []
    layout: Json = {"annotations": []}
    shared = {"tickfont": {"size": 10}, "constrain": "domain"} | ticks
    for k, (layer, head) in enumerate(np.ndindex(n_layers, n_heads)):
        x0, y1 = head * (width + gap), 1 - layer * (h + vgap)
        xd, yd = _domain(x0, x0 + width), _domain(y1 - h, y1)
        x_axis = {"domain": xd, "showticklabels": bool(ticks) and layer == n_layers - 1, "tickangle": -90}
        y_axis = {"domain": yd, "autorange": "reversed", "scaleratio": 1, "showticklabels": bool(ticks) and head == 0}
        axes = subplot(layout, k, x_axis | shared, y_axis | shared, square=True)
        names.append((axes["xaxis"], axes["yaxis"]))
        label = {"text": head_label(layer, head, lang=lang), "xref": "paper", "yref": "paper", "showarrow": False}
        layout["annotations"].append(label | {"x": sum(xd) / 2, "y": yd[1], "yanchor": "bottom", "font": {"size": 12}})
    return names, layout, height


def snapshot_grid(
    snapshots: Sequence[Attention],
    steps: Sequence[int],
    *,
    active: int | None = None,
    animate: bool = True,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Every head's square map on the probe input, one frame a snapshot (at most MAX_FRAMES,
    evenly thinned), with a slider and play / pause; `animate=False`: the `active` snapshot
    alone (default the last), as the page redraws while a run trains. Maps are block-averaged
    beyond MAX_CELLS numbers a frame. layout.meta: {"frames", "steps", "shrunk", "tick_every"}.
    """
    active = _checked(snapshots, steps, active)
    first = snapshots[0]
    L, H, n = first.n_layers, first.n_heads, first.n
    most = min(len(snapshots), MAX_FRAMES)  # the frames sent: spread evenly, the first and last kept
    spread = {round(i * (len(snapshots) - 1) / max(most - 1, 1)) for i in range(most)}
    shown = sorted({*spread, active}) if animate else [active]
    size = n if L * H * n * n <= MAX_CELLS else max(2, math.isqrt(MAX_CELLS // (L * H)))
    shrunk = size < n
    side = min(panel_px(H), MAX_GRID_PX // L)
    keys = [f"{escape(tok)} ({i})" for i, tok in enumerate(first.tokens)] if not shrunk else list(range(size))
    every = tick_every(n, side) if not shrunk and n <= MAX_TICKS_N else 0
    labels = [escape(tok) for tok in first.tokens][::every] if every else []
    ticks = {"type": "category", "tickmode": "array", "tickvals": keys[::every], "ticktext": labels} if every else {}
    axes, layout, height = _grid_axes(L, H, side, ticks, lang)
    hover = t("train_fig.hover_cell", lang, q="%{y}", k="%{x}", w="%{z:.3f}") + "<extra></extra>"

    def traces(att: Attention) -> list[Json]:
        maps = block_mean(att.weights, size) if shrunk else att.weights  # (L, H, s, s)
        return [{"type": "heatmap", "z": maps[layer, head], "x": keys, "y": keys, "xaxis": x, "yaxis": y,
                 "coloraxis": "coloraxis", "hovertemplate": hover, "name": head_label(layer, head, lang=lang)}
                for (layer, head), (x, y) in zip(np.ndindex(L, H), axes, strict=True)]  # fmt: skip

    frames: list[Json] = [{"name": str(steps[i]), "data": traces(snapshots[i])} for i in shown]
    position = shown.index(active)
    note = t("train_fig.grid_note", lang) if animate else t("train_fig.grid_live", lang, step=f"{int(steps[active]):,}")
    layout |= {
        "title": layout_title(t("train_fig.grid_title", lang, n=n), note),
        "height": height if animate else height - BOTTOM_PX + LIVE_BOTTOM_PX,
        "coloraxis": {"colorscale": SEQUENTIAL, "cmin": 0.0, "cmax": 1.0}
        | {"colorbar": {"title": {"text": t("train_fig.weight", lang)}, "len": min(1.0, 2 * side / height)}},
        "margin": {"t": TOP_PX, "b": BOTTOM_PX if animate else LIVE_BOTTOM_PX},
        "meta": {"frames": len(shown) if animate else 0, "steps": [int(steps[i]) for i in shown], "shrunk": shrunk,
                 "tick_every": every, "side": side},
    }  # fmt: skip
    if animate:
        layout |= _controls(shown, steps, position, lang)
    fig = figure(frames[position]["data"], layout)
    if animate:
        fig.frames = [go.Frame(f, _validate=False) for f in frames]
    return fig


def _checked(snapshots: Sequence[Attention], steps: Sequence[int], active: int | None) -> int:
    """The index of the snapshot shown first (default the last); errors for what cannot be drawn."""
    if not snapshots or len(snapshots) != len(steps):
        raise ValueError("give one step for each snapshot, and at least one")
    if any(s.weights.shape != snapshots[0].weights.shape for s in snapshots):
        raise ValueError("every snapshot must hold maps of the same shape")
    active = len(snapshots) - 1 if active is None else int(active)
    if not 0 <= active < len(snapshots):
        raise IndexError(f"active {active} out of range 0..{len(snapshots) - 1}")
    return active


def tick_every(n: int, side: int) -> int:
    """Label every k-th token on a map `side` pixels across, so labels never overlap."""
    return max(1, math.ceil(n * MIN_TICK_PX / max(side, 1)))


def _animate(duration: int) -> Json:
    return {"frame": {"duration": duration, "redraw": True}, "mode": "immediate", "transition": {"duration": 0}}


def _controls(shown: list[int], steps: Sequence[int], active: int, lang: str) -> Json:
    """The slider over the `shown` snapshots and the play / pause buttons under it."""
    play = _animate(250)  # every frame from the first: the last one is where a finished run rests
    slider = {
        "active": active,
        "currentvalue": {"prefix": t("train_fig.slider_prefix", lang)},
        "pad": {"t": 50},
        "steps": [
            {"label": f"{int(steps[i]):,}", "method": "animate", "args": [[str(steps[i])], _animate(0)]} for i in shown
        ],
    }
    buttons = {
        "type": "buttons",
        "direction": "left",
        "showactive": False,
        "x": 0.0,
        "y": 0.0,
        "xanchor": "right",
        "yanchor": "top",
        "pad": {"t": 60, "r": 10},
        "buttons": [
            {"label": t("train_fig.play", lang), "method": "animate", "args": [None, play]},
            {"label": t("train_fig.pause", lang), "method": "animate", "args": [[None], _animate(0)]},
        ],
    }
    return {"sliders": [slider], "updatemenus": [buttons]}


def head_score_curves(
    steps: Sequence[int] | np.ndarray,
    scores: Mapping[str, np.ndarray],
    *,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """One panel a score (previous-token, induction, diagonal), one line a head, against the
    step. scores: name -> (snapshots, layers, heads) in [0, 1]."""
    x = np.asarray(steps, dtype=np.int64)
    names = [name for name in scores if len(scores[name])]
    if not names:
        raise ValueError("no scores to draw")
    data: list[Json] = []
    gap = 0.06
    width = (1 - gap * (len(names) - 1)) / len(names)
    layout: Json = {"height": 380, "legend": {"orientation": "h", "y": -0.25}}
    for p, name in enumerate(names):
        values = np.asarray(scores[name], dtype=np.float64)  # (S, L, H)
        if values.ndim != 3 or len(values) != len(x):
            raise ValueError(f"scores[{name!r}] has shape {values.shape}, expected ({len(x)}, layers, heads)")
        x0 = p * (width + gap)
        x_axis = {"domain": _domain(x0, x0 + width), "title": {"text": t("train_fig.step", lang)}}
        axes = subplot(layout, p, x_axis, {"range": [0, 1.02], "title": {"text": t(SCORE_KEYS.get(name, name), lang)}})
        for layer, head in np.ndindex(values.shape[1:]):
            label = head_label(layer, head, lang=lang)
            colour = HEAD_COLORS[(layer * values.shape[2] + head) % len(HEAD_COLORS)]
            data.append(axes | {"type": "scatter", "mode": "lines", "x": x, "y": values[:, layer, head], "name": label,
                                "legendgroup": label, "showlegend": p == 0,
                                "line": {"color": colour, "dash": "solid" if layer % 2 == 0 else "dash"},
                                "hovertemplate": t("train_fig.hover_score", lang, head=label, step="%{x}",
                                                   value="%{y:.3f}") + "<extra></extra>"})  # fmt: skip
    layout["title"] = layout_title(t("train_fig.scores_title", lang), t("train_fig.scores_note", lang))
    return figure(data, layout)


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
