"""What a decoder adds to the views: which query heads share a key/value head (grouped-query
attention, Ainslie et al. 2023: marks on the all-heads grid, a note on the heatmap), the rotary
distance chart, and the next-word and logit lens tables as plain rows (tokens are data, never markup)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

from ..i18n import DEFAULT_LANGUAGE, t
from ..nextword import NextToken, piece_bytes
from ..result import Attention
from ._base import HEAD_COLORS, Json, figure, head_label, layout_title

if TYPE_CHECKING:  # the explain package imports torch; views do not
    from ..explain.logit_lens import LogitLens
    from ..explain.rotary import RotaryProfile

GRID_PIXELS = 72 * 32 * 32  # the mosaic budget of 72 heads at 32 x 32 (views/grid.py): ~0.5 MB at 512 tokens


def groups(att: Attention) -> list[list[int]]:
    """The query heads of each key/value head, in order; [] when every head has its own."""
    kv = att.kv_heads
    if kv is None or len(set(kv.tolist())) == att.n_heads:
        return []
    return [np.flatnonzero(kv == g).tolist() for g in sorted(set(kv.tolist()))]


def grid_thumb(att: Attention, largest: int = 32) -> int:
    """Thumbnail size of the all-heads grid: `largest`, smaller for models with many heads so
    the mosaic keeps the pixel budget of 72 heads at 32 x 32 (SmolLM2's 270 heads: 16)."""
    fit = int((GRID_PIXELS / max(1, att.n_layers * att.n_heads)) ** 0.5)
    return max(4, min(largest, fit))


def mark_groups(fig: go.Figure, att: Attention, *, lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """Outline each key/value group's columns of a `model_view` / `layer_head_grid` figure in
    its own colour, and name each head's key/value head under its number. Unchanged for a model
    whose heads each have their own keys and values."""
    marks = group_marks(att, lang=lang)
    if not marks["groups"]:
        return fig
    shapes = [{"type": "rect", "xref": "x", "yref": "y", "x0": min(g["heads"]) - 0.48, "x1": max(g["heads"]) + 0.48,
               "y0": -0.5, "y1": att.n_layers - 0.5, "line": {"color": g["colour"], "width": 2},
               "fillcolor": "rgba(0,0,0,0)"} for g in marks["groups"]]  # fmt: skip
    ticks = [f"{h}<br><span style='color:{colour}'>{label}</span>" for h, (label, colour) in enumerate(marks["kv"])]
    title = fig.layout.title.text or ""
    fig.update_layout(
        shapes=[*fig.layout.shapes, *shapes],
        xaxis={"ticktext": ticks, "tickvals": list(range(att.n_heads))},
        title={"text": f"{title}<br><sup>{marks['group_note']}</sup>"},
    )
    return fig


def group_marks(att: Attention, *, lang: str = DEFAULT_LANGUAGE) -> Json:
    """The key/value groups as the grid marks them (`mark_groups`, the canvas grid's header):
    "groups", each {"heads", "colour"}; "kv", each head's [its key/value head's short name,
    colour] (None without groups); "group_note"."""
    found = groups(att)
    kv: list[list[str] | None] = [None] * att.n_heads
    out = []
    for g, heads in enumerate(found):
        colour = HEAD_COLORS[g % len(HEAD_COLORS)]
        out.append({"heads": [int(h) for h in heads], "colour": colour})
        for h in heads:
            kv[h] = [t("dec.kv_short", lang, kv=g), colour]
    note = t("dec.grouped", lang, heads=att.n_heads, kv=len(found), per=att.n_heads // len(found)) if found else None
    return {"groups": out, "kv": kv, "group_note": note}


def group_note(att: Attention, head: int | None, *, lang: str = DEFAULT_LANGUAGE) -> str | None:
    """The key/value head one query head reads and the heads sharing it (None: no groups, or the
    mean of the heads)."""
    found = groups(att)
    if not found or head is None:
        return None
    kv = int(np.asarray(att.kv_heads)[head])
    others = ", ".join(str(h) for h in found[kv] if h != head)
    return t("dec.shares", lang, kv=kv, others=others)


def rotary_chart(profile: RotaryProfile, *, lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """Mean pre-softmax score by distance, with and without the rotary positions."""
    hover = t("dec.rotary_hover", lang, d="%{x}", s="%{y:.3f}", n="%{customdata}")
    with_without = (
        ("lines+markers", profile.mean, "dec.rotary_with", {"color": HEAD_COLORS[0]}),
        ("lines", profile.unrotated, "dec.rotary_without", {"color": HEAD_COLORS[1], "dash": "dot"}),
    )
    lines: list[Json] = [
        {"type": "scatter", "mode": mode, "x": profile.distances, "y": y, "customdata": profile.count,
         "name": t(key, lang), "line": line, "hovertemplate": hover}
        for mode, y, key, line in with_without
    ]  # fmt: skip
    title = t("dec.rotary_chart", lang, head=head_label(profile.layer, profile.head, lang=lang), kv=profile.kv_head)
    note = t("dec.rotary_note_first" if profile.skip_first else "dec.rotary_note", lang)
    layout: Json = {
        "title": layout_title(title, note),
        "xaxis": {"title": {"text": t("dec.rotary_x", lang)}},
        "yaxis": {"title": {"text": t("dec.rotary_y", lang)}},
        "legend": {"orientation": "h", "y": -0.25},
        "height": 380,
        "margin": {"t": 80},
    }
    return figure(lines, layout)


def next_rows(candidates: Sequence[NextToken], *, lang: str = DEFAULT_LANGUAGE) -> list[dict[str, object]]:
    """The next-word table: rank (1-based), what the token writes (`next_label`), probability."""
    return [
        {
            t("dec.rank", lang): i,
            t("dec.next_token", lang): next_label(c, lang=lang),
            t("dec.probability", lang): c.probability,
        }
        for i, c in enumerate(candidates, start=1)
    ]


def next_label(candidate: NextToken, *, lang: str = DEFAULT_LANGUAGE) -> str:
    """A candidate as a reader reads it: its text (spaces visible); a byte piece as "part of 他
    (2 of its 3 bytes)", never its raw bytes."""
    if not candidate.piece:
        return visible(candidate.text)
    key = "dec.piece_of" if candidate.text else "dec.piece_unknown"
    return t(key, lang, text=visible(candidate.text), own=candidate.own_bytes, total=candidate.text_bytes)


def lens_rows(
    lens: LogitLens, *, lang: str = DEFAULT_LANGUAGE, known: Mapping[str, NextToken] | None = None
) -> list[dict[str, str]]:
    """The logit lens as a table: a row per layer, a column per rank, each cell "token
    (probability)"; a byte piece as `next_label` of its `known` candidate, else "part of a
    character"."""
    rows = []
    for layer, (tokens, probs) in enumerate(zip(lens.tokens, lens.probs.tolist(), strict=True)):
        row = {t("dec.lens_layer", lang): str(layer)}
        for rank, (tok, p) in enumerate(zip(tokens, probs, strict=True), start=1):
            own = piece_bytes(tok)
            if own is None:
                label = visible(tok)
            elif known and tok in known:
                label = next_label(known[tok], lang=lang)
            else:
                label = t("dec.piece_unknown", lang, own=len(own))
            row[f"{t('dec.rank', lang)} {rank}"] = t("dec.lens_cell", lang, token=label, p=f"{p:.1%}")
        rows.append(row)
    return rows


def visible(token: str) -> str:
    """A token as a table shows it: a leading space as ␣, newlines and tabs as \\n and \\t."""
    out = token.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return "\u2423" + out[1:] if out.startswith(" ") else (out or "\u2423")
