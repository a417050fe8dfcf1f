"""Why a head looks there, as the page shows it: the parts of one score (`explain.score_sources`)
named in the visitor's language, the top parts a side, the part-by-part matrix cut to the top k x k
with the rest summed as "other", and the numbers a head's card reads off its attention."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ..result import Attention
from .heatmaps import matrix
from .margins import MAX_LABEL_PX, TICK_FONT_PX, TICK_ROOM_PX, TITLE_ROOM_PX, label_px, stand_upright, top_title

if TYPE_CHECKING:  # the views take explain's results but do not need torch to be imported
    from ..explain import ScoreSources

MATRIX_TOP = 8  # parts a side in the matrix; the rest summed into one "other" row or column
SIDE_TOP = 5  # parts listed a side
OTHER = "other"  # the summed rest's name in `top_matrix`
_MLP = re.compile(r"L(\d+) mlp")


def part_label(name: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """A part of `ScoreSources` as the page names it: heads stay "L3H5" (as the pickers and the
    command line write them), "embed", "bias", "L3 mlp" and `OTHER` in the visitor's language."""
    if name in ("embed", "bias", OTHER):
        return t(f"why.part_{name}", lang)
    mlp = _MLP.fullmatch(name)
    return t("why.part_mlp", lang, layer=int(mlp.group(1))) if mlp else name


def share_text(share: float) -> str:
    """A share of the score as the page writes it ("81.2%", "-19.0%"; "–" for no score)."""
    return "–" if not np.isfinite(share) else f"{share:.1%}"


def side_rows(s: ScoreSources, side: str, lang: str = DEFAULT_LANGUAGE) -> list[dict[str, str]]:
    """The `SIDE_TOP` parts of one side ("query" or "key") that move the score most, as table rows:
    the part's name, its value and its share of the score (`ScoreSources.top`)."""
    head = (t("why.col_part", lang), t("why.col_value", lang), t("why.col_share", lang))
    return [dict(zip(head, (part_label(name, lang), f"{value:+.3f}", share_text(share)), strict=True))
            for name, value, share in s.top(side, SIDE_TOP)]  # fmt: skip


def _grouped(values: np.ndarray, parts: list[str], k: int) -> tuple[list[list[int]], list[str]]:
    """One side's k parts of largest |value|, largest first (stable: `ScoreSources.top`'s order),
    then the rest as one group named `OTHER` if any: (index groups, names)."""
    kept = [int(i) for i in np.argsort(-np.abs(values), kind="stable")[:k]]
    rest = [i for i in range(len(parts)) if i not in kept]
    return [[i] for i in kept] + ([rest] if rest else []), [parts[i] for i in kept] + ([OTHER] if rest else [])


def top_matrix(s: ScoreSources, k: int = MATRIX_TOP) -> tuple[list[str], list[str], np.ndarray]:
    """(query-side names, key-side names, values): the matrix's k query-side parts that move the
    score most down the side, the k key-side ones across, and where a side has more parts, one
    `OTHER` row or column holding the rest summed. The values still sum to the score."""
    row_groups, row_names = _grouped(s.query_side, s.query_parts, k)
    col_groups, col_names = _grouped(s.key_side, s.key_parts, k)
    values = np.array([[s.matrix[np.ix_(r, c)].sum() for c in col_groups] for r in row_groups])
    return row_names, col_names, values


def why_matrix(s: ScoreSources, *, lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """The part-by-part matrix (`top_matrix`) with its numbers in the cells: query-side parts
    down the side, key-side parts across (labelled under it, so the title above has its own
    room); the cells sum to the score."""
    rows, cols, values = top_matrix(s)
    names = [part_label(c, lang) for c in cols]
    fig = matrix(values, [part_label(r, lang) for r in rows], names, None, ".2f", lang=lang)
    heading, top = top_title(t("why.fig_matrix", lang, score=f"{s.score:.3f}"))
    labels = min(max(label_px(n) for n in names), MAX_LABEL_PX) if stand_upright(names) else TICK_FONT_PX
    below = labels + TICK_ROOM_PX + TITLE_ROOM_PX["x"]
    fig.update_layout(
        title=heading,
        height=int(top + 34 * len(rows) + below + 10),
        margin={"t": top, "b": int(below)},
        xaxis={"side": "bottom", "title": {"text": t("why.fig_key_side", lang)}},
        yaxis={"title": {"text": t("why.fig_query_side", lang)}},
    )
    return fig


def reads_most(att: Attention, layer: int, head: int) -> list[tuple[int, float]]:
    """The 3 tokens head (layer, head) reads most on this sentence: (token, the mean over its
    query rows of the weight on it), largest first. A causal head's early tokens are seen by
    more rows, so they gather more of this mean."""
    received = att.head(layer, head).astype(np.float64).mean(0)  # (n,) rows sum to 1: so does this
    order = np.argsort(-received, kind="stable")[:3]
    return [(int(j), float(received[j])) for j in order]


def map_change(base: Attention, switched: Attention, after: int) -> tuple[int, int, float] | None:
    """The head of a layer after `after` whose map moves most with the switch: (layer, head,
    the share of its attention that moves, half the mean over rows of sum_j |change|, 0..1).
    None where no layer comes after."""
    if base.weights.shape != switched.weights.shape:
        raise ValueError(f"attention shapes differ: {base.weights.shape} and {switched.weights.shape}")
    if after + 1 >= base.n_layers:
        return None
    moved = 0.5 * np.abs(switched.weights[after + 1 :].astype(np.float64) - base.weights[after + 1 :]).sum(-1).mean(-1)
    layer, head = np.unravel_index(int(np.argmax(moved)), moved.shape)
    return int(layer) + after + 1, int(head), float(moved[layer, head])
