"""Margins made room for on the server, so plotly.js draws a token map once: with `automargin` on
it draws, measures its labels, widens the margins and draws again. So the maps here turn it off,
set margins from generous estimates of labels and titles (`label_px`) and fix the x labels'
angle; a label wider than `MAX_LABEL_PX` is shortened on the axis (hover names the whole token).
"""

from __future__ import annotations

import html
import unicodedata

import numpy as np

from ._base import Json, escape, map_height

TICK_FONT_PX = 12  # the tick labels' font size (app/plot_theme.py: Streamlit's look)
MAX_LABEL_PX = 110  # a tick label wider than this is shortened on the axis
SIDE_BY_SIDE_PX = 260  # x labels wider than this all together stand upright (a narrow column's plot width)
TICK_ROOM_PX = 14  # margin.pad, the gap plotly.js keeps between the axis and its labels, and a little air
TITLE_ROOM_PX = {"x": 20 + 22, "y": 24 + 22}  # the theme's title standoff and the title's own line
TITLE_FONT_PX = 16  # a figure title's font (app/plot_theme.py); its note is Plotly's <sup>, 0.7 of it
# A title pinned to the top, as chromium draws it: 21 px a title line, 14 px a note line, the pad
# above; plotly.js draws a multi-line title 11 px higher than `yanchor: "top"` asks.
LINE_PX, NOTE_LINE_PX, TITLE_PAD_PX, MULTILINE_SHIFT_PX = 21, 14, 10, 11
PHONE_CHART_PX = 358  # a chart's width on a 390 px phone
PHONE_TITLE_PX = 320  # a line of a title on a 390 px phone: the chart's 358 px less the title's pad and air
PANEL_TITLE_PX = 130  # a map's title where two maps share a 390 px phone's chart: half its plot, less air
PANEL_LINE_PX = 15  # a line of a panel's title (11 or 12 px font, 1.3 em apart) and a little air


def _em(c: str) -> float:
    return 1.0 if unicodedata.east_asian_width(c) in "WF" else 0.62


def label_px(text: str, size: float = TICK_FONT_PX) -> float:
    """An upper estimate of a label's width in px: `text` as Plotly reads it (entities such as
    "&lt;" are one character), a wide (CJK) character 1 em, any other 0.62 em (Source Sans's
    widest capitals; most letters are near 0.5 em)."""
    return size * sum(_em(c) for c in html.unescape(text))


def wrapped(text: str, max_px: float, size: float = TICK_FONT_PX) -> str:
    """`text` (Plotly text, its entities kept; its own lines, <br>, apart) broken with <br> into
    lines of at most `max_px` as `label_px` estimates them: at spaces, and between any two wide
    (CJK) characters, which need no space; a word longer than a line keeps a line of its own."""
    if "<br>" in text:
        return "<br>".join(wrapped(line, max_px, size) for line in text.split("<br>"))
    pieces: list[str] = []  # where a line may break: a word with the space before it, or one wide character
    for c in text:
        if pieces and not c.isspace() and _em(c) < 1 and _em(pieces[-1][-1]) < 1:  # a space is narrow too
            pieces[-1] += c
        else:
            pieces.append(c)
    lines = [""]
    for word in pieces:
        if lines[-1] and label_px((lines[-1] + word).rstrip(), size) > max_px:
            lines.append("")
        lines[-1] = lines[-1] + word if lines[-1] else word.lstrip()
    return "<br>".join(line.rstrip() for line in lines if line)


def top_title(title: str, note: str | None = None, max_px: float = PHONE_TITLE_PX) -> tuple[Json, int]:
    """A figure title (and its note in small print) wrapped to lines of `max_px`, pinned to the
    figure's top (Plotly would centre it in the margin, into subplot titles), and the px it takes."""
    head = wrapped(title, max_px, TITLE_FONT_PX)
    small = [] if note is None else wrapped(note, max_px, 0.7 * TITLE_FONT_PX).split("<br>")
    lines = head.count("<br>") + 1
    text = head + "".join(f"<br><sup>{line}</sup>" for line in small)
    pad = TITLE_PAD_PX + (MULTILINE_SHIFT_PX if lines + len(small) > 1 else 0)
    spec = {"text": text, "yref": "container", "y": 1, "yanchor": "top", "pad": {"t": pad}}
    return spec, int(TITLE_PAD_PX + LINE_PX * lines + NOTE_LINE_PX * len(small) + 6)


def _shortened(text: str, max_px: float) -> str:
    """`text` (escaped for Plotly) cut to fit `max_px` with an ellipsis, still escaped: one pass."""
    if label_px(text) <= max_px:
        return text
    room, kept = max_px - label_px("…"), []
    for c in html.unescape(text):
        room -= TICK_FONT_PX * _em(c)
        if room < 0:
            break
        kept.append(c)
    return escape("".join(kept)) + "…"


def stand_upright(labels: list[str], room_px: float = SIDE_BY_SIDE_PX) -> bool:
    """Whether an axis's labels stand upright: they would not fit side by side in `room_px` (a
    narrow column's). Decided here: plotly.js measures before the page's font loads."""
    return sum(label_px(label) + 6 for label in labels) > room_px


def _labels(axis: Json) -> list[str]:
    """The axis's tick labels: its ticktext, else its tick values as text."""
    labels = axis.get("ticktext")
    return [str(label) for label in (axis.get("tickvals") or [] if labels is None else labels)]


def _title(axis: Json) -> str:
    title = axis.get("title")
    return str(title.get("text") or "") if isinstance(title, dict) else str(title or "")


def fit_margins(layout: Json, below: float = 0) -> Json:
    """`layout` (a dict with `xaxis` and `yaxis`) with automargin off, long tick labels shortened,
    the x labels' angle fixed, and left and bottom margins for labels, titles and `below` px more
    (a colour bar lying there). Other margins are kept."""
    x, y = dict(layout["xaxis"]), dict(layout["yaxis"])
    for axis in (x, y):
        if "ticktext" in axis:
            axis["ticktext"] = [_shortened(label, MAX_LABEL_PX) for label in _labels(axis)]
        axis["automargin"] = False
    upright = stand_upright(_labels(x))
    x["tickangle"] = 90 if upright else 0
    x_labels = max((label_px(label) for label in _labels(x)), default=0.0) if upright else 1.4 * TICK_FONT_PX
    y_labels = max((label_px(label) for label in _labels(y)), default=0.0)
    bottom = x_labels + TICK_ROOM_PX + (TITLE_ROOM_PX["x"] if _title(x) else 0) + below
    left = y_labels + TICK_ROOM_PX + (TITLE_ROOM_PX["y"] if _title(y) else 0)
    margin = dict(layout.get("margin") or {}) | {"l": int(left + 0.5), "b": int(bottom + 0.5)}
    return layout | {"xaxis": x, "yaxis": y, "margin": margin}


def square_fit(layout: Json, data: list[Json]) -> tuple[float, float, float] | None:
    """How tall a figure of square maps need be at plot width W: (t + b, l + r, k) with height =
    t + b + k * (W - l - r); None where unknown here (automargin, a standing colour bar). On a
    narrow screen a square map fills its width and leaves the rest of a fixed height empty."""
    margin = layout.get("margin") or {}
    if any(layout[k].get("automargin") is not False for k in layout if k.startswith(("xaxis", "yaxis"))):
        return None
    k = 0.0
    for trace in data:
        if trace.get("type") != "heatmap":
            continue
        bar = trace.get("colorbar") or {}
        if trace.get("showscale") is not False and bar.get("orientation") != "h":
            return None
        x = layout.get("xaxis" + str(trace.get("xaxis", "x"))[1:]) or {}
        y = layout.get("yaxis" + str(trace.get("yaxis", "y"))[1:]) or {}
        if not y.get("scaleanchor") or y.get("constrain") != "domain":
            continue
        shape = np.shape(trace["z"])  # (rows, cols)
        rows, cols = _length(y.get("range"), shape[0]), _length(x.get("range"), shape[1])
        dx, dy = _length(x.get("domain"), 1), _length(y.get("domain"), 1)
        k = max(k, dx * rows / cols / dy / float(y.get("scaleratio") or 1))
    if k == 0:
        return None
    return margin.get("t", 100) + margin.get("b", 80), margin.get("l", 0) + margin.get("r", 0), k


def _length(ends: list[float] | None, default: float) -> float:
    """The length of an axis's range (in data units; none: its heatmap's cells) or domain (none: 1)."""
    lo, hi = ends or (0, default)
    return abs(float(hi) - float(lo))


def square_map_layout(title: str, note: str | None, n: int, axis: Json, x_title: str, y_title: str) -> Json:
    """The layout of an n x n token map: square cells, rows top down, height growing with n; its
    title and note wrapped to a phone's width and pinned to the top (`margins.top_title`)."""
    heading, top = top_title(title, note)
    return {
        "title": heading,
        "margin": {"t": top},
        "height": map_height(n),
        "xaxis": axis | {"title": {"text": x_title}, "constrain": "domain"},
        "yaxis": axis
        | {"title": {"text": y_title}, "autorange": "reversed", "scaleanchor": "x", "constrain": "domain"},
    }
