"""Margins made room for on the server, so plotly.js draws a token map once (issue 24.1).

With an axis's `automargin` on (Streamlit's chart look turns it on for every axis), plotly.js
draws the whole figure, measures its tick labels in the page (each measurement a layout of the
page), widens the margins and draws everything again, often more than once. For the explorer's
heatmap at 512 tokens that was 260-460 ms of the browser's main thread against 50-75 ms with
the margins given; for the all-heads grid 145-240 ms against 30-50 ms (chromium, the figures of
the app, `Plotly.newPlot` timed in the page). So the maps here turn automargin off and set the
left and bottom margins from their tick labels and axis titles, estimated generously from their
characters (`label_px`), and fix the x labels' angle (upright when they would not fit side by
side, which plotly.js would otherwise decide after a draw). A label wider than `MAX_LABEL_PX`
is shortened with an ellipsis on the axis; hover still names the whole token.
"""

from __future__ import annotations

import html
import unicodedata

from ._base import Json, escape

__all__ = ["MAX_LABEL_PX", "fit_margins", "label_px", "wrapped"]

TICK_FONT_PX = 12  # the tick labels' font size (app/plot_theme.py: Streamlit's look)
MAX_LABEL_PX = 110  # a tick label wider than this is shortened on the axis
SIDE_BY_SIDE_PX = 260  # x labels wider than this all together stand upright (a narrow column's plot width)
TICK_ROOM_PX = 14  # margin.pad, the gap plotly.js keeps between the axis and its labels, and a little air
TITLE_ROOM_PX = {"x": 20 + 22, "y": 24 + 22}  # the theme's title standoff and the title's own line


def _em(c: str) -> float:
    return 1.0 if unicodedata.east_asian_width(c) in "WF" else 0.62


def label_px(text: str, size: float = TICK_FONT_PX) -> float:
    """An upper estimate of a label's width in px: `text` as Plotly reads it (entities such as
    "&lt;" are one character), a wide (CJK) character 1 em, any other 0.62 em (Source Sans's
    widest capitals; most letters are near 0.5 em)."""
    return size * sum(_em(c) for c in html.unescape(text))


def wrapped(text: str, max_px: float, size: float = TICK_FONT_PX) -> str:
    """`text` (Plotly text, its entities kept) broken with <br> into lines of at most `max_px` as
    `label_px` estimates them: at spaces, and between any two wide (CJK) characters, which need
    no space; a word longer than a line keeps a line of its own."""
    lines: list[str] = []
    line = ""
    for word in _breakable(text):
        joined = line + word if line else word.lstrip()
        if line and label_px(joined.rstrip(), size) > max_px:
            lines.append(line.rstrip())
            joined = word.lstrip()
        line = joined
    if line:
        lines.append(line.rstrip())
    return "<br>".join(lines)


def _breakable(text: str) -> list[str]:
    """`text` in the pieces a line may break between: a word with the space before it, or one wide character."""
    pieces: list[str] = []
    for c in text:
        if pieces and not c.isspace() and _em(c) < 1 and _em(pieces[-1][-1]) < 1:  # a space is narrow too
            pieces[-1] += c
        else:
            pieces.append(c)
    return pieces


def _shortened(text: str, max_px: float) -> str:
    """`text` (escaped for Plotly) cut to fit `max_px` with an ellipsis, still escaped: one pass
    over the characters, whatever length a visitor's word has."""
    if label_px(text) <= max_px:
        return text
    room, kept = max_px - label_px("…"), []
    for c in html.unescape(text):
        room -= TICK_FONT_PX * _em(c)
        if room < 0:
            break
        kept.append(c)
    return escape("".join(kept)) + "…"


def _labels(axis: Json) -> list[str]:
    """The axis's tick labels: its ticktext, else its tick values as text."""
    labels = axis.get("ticktext")
    if labels is None:
        labels = axis.get("tickvals") or []
    return [str(label) for label in labels]


def _title(axis: Json) -> str:
    title = axis.get("title")
    return str(title.get("text") or "") if isinstance(title, dict) else str(title or "")


def fit_margins(layout: Json) -> Json:
    """`layout` (a plain dict with an `xaxis` and a `yaxis` on the left and bottom) with both
    axes' automargin off, long tick labels shortened, the x labels' angle fixed and the left and
    bottom margins made room for the labels and the axis titles. Other margins are kept (the
    colour bar still pushes the right margin: that costs no second draw)."""
    x, y = dict(layout["xaxis"]), dict(layout["yaxis"])
    for axis in (x, y):
        labels = _labels(axis)
        if "ticktext" in axis:
            axis["ticktext"] = [_shortened(label, MAX_LABEL_PX) for label in labels]
        axis["automargin"] = False
    x_widths = [label_px(label) for label in _labels(x)]
    upright = sum(width + 6 for width in x_widths) > SIDE_BY_SIDE_PX
    x["tickangle"] = 90 if upright else 0
    x_labels = max(x_widths, default=0.0) if upright else 1.4 * TICK_FONT_PX
    y_labels = max((label_px(label) for label in _labels(y)), default=0.0)
    bottom = x_labels + TICK_ROOM_PX + (TITLE_ROOM_PX["x"] if _title(x) else 0)
    left = y_labels + TICK_ROOM_PX + (TITLE_ROOM_PX["y"] if _title(y) else 0)
    margin = dict(layout.get("margin") or {}) | {"l": int(left + 0.5), "b": int(bottom + 0.5)}
    return layout | {"xaxis": x, "yaxis": y, "margin": margin}
