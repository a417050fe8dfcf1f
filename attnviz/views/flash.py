"""Figures of the lab's FlashAttention walk (attnviz/lab/flash.py): the score matrix in tiles, the
step's outlined and those done shaded, and the tiled result beside plain attention; plus that
plain reference and the seeded example walked when the sentence is too long."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ..lab.flash import FlashResult
from ._base import BAR_ROOM_PX, Json, colorbar_under, escape, figure, panel_title, subplot
from .margins import PANEL_LINE_PX, PANEL_TITLE_PX, top_title, wrapped

DONE = "rgba(120,120,120,0.35)"
CURRENT = "#d62728"


def random_example(n: int = 10, d: int = 8, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeded q, k, v (n, d) float32, for a walk when the sentence is longer than the walk shows."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((n, d)).astype(np.float32) for _ in range(3))
    return q, k, v


def plain_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, *, causal: bool = False, scale: float | None = None
) -> np.ndarray:
    """softmax(q k^T * scale) v written out in float32, the n x n weights held: what eager does."""
    q, k, v = (np.asarray(x, dtype=np.float32) for x in (q, k, v))
    s = np.float32(q.shape[1] ** -0.5 if scale is None else scale)
    scores = (q @ k.T) * s
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, np.float32(-np.inf))
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    return np.asarray(weights @ v, dtype=np.float32)


def _rect(rows: tuple[int, int], cols: tuple[int, int], name: str) -> Json:
    shape: Json = {"type": "rect", "name": name, "xref": "x", "yref": "y", "layer": "above",
                   "x0": cols[0] - 0.5, "x1": cols[1] - 0.5, "y0": rows[0] - 0.5, "y1": rows[1] - 0.5}  # fmt: skip
    if name == "current":
        return shape | {"line": {"color": CURRENT, "width": 3}, "fillcolor": "rgba(0,0,0,0)"}
    return shape | {"line": {"width": 0}, "fillcolor": DONE}


def tile_grid(
    result: FlashResult,
    scores: np.ndarray,
    step: int,
    tokens: Sequence[str] | None = None,
    *,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """The scaled scores (n x n, blank where masked) with the tiles of steps before `step` shaded
    and step `step`'s tile outlined (shapes named "done" and "current")."""
    if not 0 <= step < len(result.steps):
        raise ValueError(f"step must be in [0, {len(result.steps)}), got {step}")
    n_q, n_k = scores.shape
    z = np.where(np.isfinite(scores), scores, np.nan)
    shapes = [_rect(s.queries, s.keys, "done") for s in result.steps[:step]]
    now = result.steps[step]
    shapes.append(_rect(now.queries, now.keys, "current"))
    labels = [escape(tok) for tok in tokens] if tokens is not None and len(tokens) == n_q == n_k else None
    axis: Json = {"tickfont": {"size": 10}, "constrain": "domain"}
    if labels is not None:
        axis |= {"tickmode": "array", "tickvals": list(range(n_k)), "ticktext": labels}
    data: list[Json] = [{"type": "heatmap", "z": z, "colorscale": "Blues", "colorbar": colorbar_under(t("flash_fig.score", lang)),
                         "hovertemplate": t("flash_fig.hover", lang, q="%{y}", k="%{x}", s="%{z:.3f}") + "<extra></extra>"}]  # fmt: skip
    title = t("flash_fig.grid_title", lang, step=step + 1, steps=len(result.steps), q0=now.queries[0],
              q1=now.queries[1] - 1, k0=now.keys[0], k1=now.keys[1] - 1)  # fmt: skip
    note = t("flash_fig.skipped", lang) if now.skipped else t("flash_fig.grid_note", lang)
    heading, top = top_title(title, note)
    layout: Json = {"height": 350 + top + BAR_ROOM_PX, "margin": {"t": top, "b": 60 + BAR_ROOM_PX}, "shapes": shapes,
                    "title": heading, "xaxis": axis | {"title": {"text": t("flash_fig.keys", lang)}, "tickangle": -90},
                    "yaxis": axis | {"title": {"text": t("flash_fig.queries", lang)}, "autorange": "reversed",
                                     "scaleanchor": "x"}}  # fmt: skip
    return figure(data, layout)


def step_rows(result: FlashResult, step: int, tokens: Sequence[str] | None = None) -> list[dict[str, str]]:
    """The step's table, one row per query of its block: the running maximum before and after,
    the rescaling factor exp(m - m') and the running sum after. Keys are catalogue-free column ids
    (query, max_before, max_after, rescale, sum_after); the page names them."""
    s = result.steps[step]

    def num(x: float) -> str:
        return "-∞" if x == -np.inf else f"{x:.4f}"

    rows = []
    for r, i in enumerate(range(*s.queries)):
        label = f"{i}" if tokens is None or i >= len(tokens) else f"{i} {tokens[i]}"
        rows.append({"query": label, "max_before": num(s.max_before[r]), "max_after": num(s.max_after[r]),
                     "rescale": num(s.rescale[r]), "sum_after": num(s.sum_after[r])})  # fmt: skip
    return rows


def result_pair(tiled: np.ndarray, plain: np.ndarray, *, lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """The tiled output beside plain attention's (rows: queries, columns: value dimensions), one
    colour scale, and the largest absolute difference in the title."""
    diff = float(np.abs(np.asarray(tiled, dtype=np.float64) - np.asarray(plain, dtype=np.float64)).max())
    lo = float(min(tiled.min(), plain.min()))
    hi = float(max(tiled.max(), plain.max()))
    data: list[Json] = []
    heading, top = top_title(t("flash_fig.result_title", lang, diff=f"{diff:.1e}"), t("flash_fig.result_note", lang))
    names = [wrapped(t(key, lang), PANEL_TITLE_PX) for key in ("flash_fig.tiled", "flash_fig.plain")]
    top += PANEL_LINE_PX * max(name.count("<br>") + 1 for name in names)  # the maps' own titles
    layout: Json = {"height": 270 + top, "margin": {"t": top, "b": 40}, "annotations": [], "title": heading}
    for k, (z, name) in enumerate(zip((tiled, plain), names, strict=True)):
        axes = subplot(layout, k, {"domain": [0.0, 0.46] if k == 0 else [0.54, 1.0]}, {"autorange": "reversed"})
        data.append({"type": "heatmap", "z": np.asarray(z, dtype=np.float64), "zmin": lo, "zmax": hi,
                     "colorscale": "RdBu", "showscale": k == 1,
                     "hovertemplate": "%{y}, d%{x}: %{z:.6f}<extra></extra>"} | axes)  # fmt: skip
        layout["annotations"].append(panel_title(name, 0.23 + 0.54 * k))
    return figure(data, layout)
