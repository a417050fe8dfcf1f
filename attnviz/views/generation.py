"""What the Write panel shows of a generation (`attnviz.generate`): each step's token and
alternatives as a reader reads them, the text written so far in whole characters, and the new
token's attention row (one head as bars, every head of a layer as a heatmap). No torch.

A byte-level tokenizer (SmolLM2) writes 你 as two or three byte pieces, one a step; a piece is
labelled by the character its neighbouring steps complete ("part of 你 (2 of its 3 bytes)",
`views.decoder.next_label`), else "part of a character"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ..nextword import NextToken, missing_bytes, piece_bytes
from ..result import char_groups
from ._base import FOCUS_COLOR, HEAD_COLORS, SEQUENTIAL, Json, escape, figure, head_label, tick_step, token_axis
from .decoder import next_label
from .margins import SIDE_BY_SIDE_PX, stand_upright, top_title

if TYPE_CHECKING:
    from ..generation import Generation

MAX_X_LABELS = 24  # token labels on an axis: upright ones still fit side by side in a 390 px phone's chart
LAYER_PLOT_PX = 160  # the heatmap's plot in a 390 px phone's chart: its head labels left, its colour bar right
PROMPT_COLOR, WRITTEN_COLOR = HEAD_COLORS[0], HEAD_COLORS[2]


@dataclass(frozen=True)
class Choice:
    """One of a step's likeliest tokens: how it reads, its probability, its id, and whether it
    is the token written there."""

    label: str
    probability: float
    token_id: int
    chosen: bool


def _pending(gen: Generation, k: int) -> bytes:
    """The bytes of a character the steps before step k began and did not finish (b"" if none)."""
    data = b""
    for step in reversed(gen.steps[:k]):
        own = piece_bytes(step.token)
        if own is None:
            break
        data = own + data
    start = max((i for i, b in enumerate(data) if b >= 0xC0), default=-1)  # the last character of 2 to 4 bytes
    return data[start:] if start >= 0 and missing_bytes(data[start:]) > 0 else b""


def _label(gen: Generation, k: int, token: str, probability: float, chosen: bool, lang: str) -> str:
    own = piece_bytes(token)
    if own is None:
        return next_label(NextToken(token, probability, token), lang=lang)
    full = _pending(gen, k) + own
    after = gen.steps[k + 1 :] if chosen else []
    for step in after[:3]:  # a character has at most 4 bytes: 3 more pieces at most
        more = piece_bytes(step.token)
        if more is None or missing_bytes(full) <= 0:
            break
        full += more
    whole = missing_bytes(full) == 0
    text = full.decode("utf-8") if whole else ""
    return next_label(NextToken(token, probability, text, True, len(own), len(full) if whole else 0), lang=lang)


def step_label(gen: Generation, k: int, *, lang: str = DEFAULT_LANGUAGE) -> str:
    """The token written at step k as a reader reads it (spaces visible, a piece named by its
    character)."""
    step = gen.steps[k]
    return _label(gen, k, step.token, step.probability, True, lang)


def choices(gen: Generation, k: int, *, lang: str = DEFAULT_LANGUAGE) -> list[Choice]:
    """Step k's likeliest tokens, best first, each labelled as `step_label` labels the chosen one."""
    step = gen.steps[k]
    return [
        Choice(_label(gen, k, token, p, tid == step.token_id, lang), float(p), int(tid), tid == step.token_id)
        for (token, p), tid in zip(step.alternatives, step.alternative_ids, strict=True)
    ]


def written_until(text: str, spans: Sequence[tuple[int, int]], special: Sequence[bool], position: int) -> str:
    """The text of the sequence through `position`, whole characters only: a character whose
    byte pieces run past `position` is left out (its pieces span the whole character). `text`,
    `spans`, `special`: the final sequence as the runner reads it."""
    end = 0
    for group in char_groups([(int(a), int(b)) for a, b in spans], np.asarray(special, dtype=bool)):
        if group[-1] > position:
            break
        end = max(end, *(int(spans[i][1]) for i in group))
    return text[:end]


def parting(a: Sequence[int], b: Sequence[int]) -> int:
    """The first position where two sequences of ids differ (the shorter one's length if none)."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def sink_share(rows: np.ndarray, head: int | None = None) -> float:
    """The share of a step's attention on position 0: of one head of a layer's rows (heads,
    positions), or their mean (head None)."""
    first = np.asarray(rows)[..., 0]
    return float(first.mean() if head is None else first[head])


def size_text(n_bytes: int, *, lang: str = DEFAULT_LANGUAGE) -> str:
    """Bytes as KB under a megabyte, MB above (1 KB = 1,024 bytes)."""
    if n_bytes < 2**20:
        return t("write.kb", lang, n=f"{n_bytes / 2**10:,.1f}")
    return t("write.mb", lang, n=f"{n_bytes / 2**20:,.2f}")


def _x_axis(tokens: Sequence[str], room_px: float = SIDE_BY_SIDE_PX) -> tuple[list[str], Json]:
    """A token axis labelled at most `MAX_X_LABELS` times, counted back from the newest token
    (always labelled), upright when the labels would not fit side by side in `room_px` (the
    plot's width in a phone's chart)."""
    keys, axis = token_axis(tokens)
    step = tick_step(len(keys), MAX_X_LABELS)
    shown = [escape(tok) for tok in tokens][::-1][::step][::-1]
    axis |= {"tickvals": keys[::-1][::step][::-1], "ticktext": shown}
    return keys, axis | {"tickangle": -90 if stand_upright(shown, room_px) else 0, "automargin": True}


def row_figure(gen: Generation, k: int, layer: int, head: int | None, *, lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """The token written at step k: its attention over every position so far (itself last) in
    one head of `layer`, or their mean (head None); prompt, written and new token coloured apart."""
    step = gen.steps[k]
    row = step.rows[layer].mean(axis=0) if head is None else step.rows[layer, head]
    n = row.shape[-1]
    keys, axis = _x_axis(gen.tokens[:n])
    colours = [PROMPT_COLOR if i < gen.n_prompt else WRITTEN_COLOR for i in range(n - 1)] + [FOCUS_COLOR]
    bar: Json = {
        "type": "bar",
        "x": keys,
        "y": np.asarray(row, dtype=np.float32),
        "marker": {"color": colours},
        "hovertemplate": t("write.row_hover", lang, token="%{x}", w="%{y:.3f}") + "<extra></extra>",
    }
    n_heads = step.rows.shape[1]
    where = (
        t("write.layer_mean", lang, layer=layer, heads=n_heads) if head is None else head_label(layer, head, lang=lang)
    )
    title = t("write.row_title", lang, token=escape(step_label(gen, k, lang=lang)), head=where)
    head_spec, top = top_title(title, t("write.row_note", lang))
    layout: Json = {
        "title": head_spec,
        "xaxis": axis,
        "yaxis": {"title": {"text": t("write.weight", lang)}, "rangemode": "tozero"},
        "height": 300 + top,
        "margin": {"t": top + 10},
        "showlegend": False,
    }
    return figure([bar], layout)


def layer_figure(gen: Generation, k: int, layer: int, *, lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """Every head's row of `layer` at step k in one heatmap: a line a head, a column a position
    (0 to 1 on one colour scale, so heads compare)."""
    rows = np.asarray(gen.steps[k].rows[layer], dtype=np.float32)  # (heads, positions)
    heads, n = rows.shape
    keys, axis = _x_axis(gen.tokens[:n], LAYER_PLOT_PX)
    names = [t("fig.head_n", lang, h=h) for h in range(heads)]
    if gen.kv_heads is not None and len(set(np.asarray(gen.kv_heads).tolist())) < heads:
        names = [f"{name} · {t('dec.kv_short', lang, kv=int(g))}" for name, g in zip(names, gen.kv_heads, strict=True)]
    trace: Json = {
        "type": "heatmap",
        "z": rows,
        "x": keys,
        "y": names,
        "zmin": 0.0,
        "zmax": 1.0,
        "colorscale": SEQUENTIAL,
        "colorbar": {"title": {"text": t("write.weight", lang), "side": "right"}, "thickness": 10},
        "hovertemplate": t("write.layer_hover", lang, head="%{y}", token="%{x}", w="%{z:.3f}") + "<extra></extra>",
    }
    title = t("write.layer_title", lang, layer=layer, heads=heads)
    head_spec, top = top_title(title)
    layout: Json = {
        "title": head_spec,
        "xaxis": axis,
        "yaxis": {"type": "category", "autorange": "reversed", "automargin": True},
        "height": int(np.clip(110 + 26 * heads, 220, 440)) + top,
        "margin": {"t": top + 10},
    }
    return figure([trace], layout)
