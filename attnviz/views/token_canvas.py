"""A one-head token map (views/spec.py) as the bytes the app's canvas (app/canvas/token_canvas.js)
draws from, one pixel a cell, with no plotly figure: a cold server's first map needs neither plotly
nor pandas. Little-endian:

    b"AVM1" | uint32 header length | UTF-8 JSON header | zero padding to 4 | float32 rows x cols

The header carries the spec's words, tokens as they are (the canvas writes them as text, never as
markup), colour scale and range, the hover lines with {q}, {k} and {w}, and `map_payload`'s options.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from ._base import Json
from .spec import HeatmapSpec

MAGIC = b"AVM1"


def map_payload(
    spec: HeatmapSpec,
    *,
    palette: dict[str, dict[str, str]],
    hint: str = "",
    after: tuple[str, int] | None = None,
    click: bool = False,
    mark: tuple[int, int] | None = None,
) -> bytes:
    """The canvas message for one map; `palette`: the light and dark colours ({"light": {"heading",
    "label", "background"}, "dark": ...}); `hint`: how to zoom, for screen readers; `after`: see
    `waits_for`; `click`: a click on a cell is sent back (the app's "why"); `mark`: the (row,
    column) cell outlined."""
    words = ("title", "note", "xtitle", "ytitle", "bar", "zmin", "zmax", "height")
    head_: Json = {name: getattr(spec, name) for name in words} | {
        "shape": list(spec.z.shape),
        "rows": list(spec.rows),
        "cols": list(spec.cols),
        "hover": spec.hover.split("<br>"),
        "scale": [list(stop) for stop in spec.scale],
        "palette": palette,
        "hint": hint,
        "after": waits_for(after),
        "click": bool(click),
        "mark": None if mark is None else [int(mark[0]), int(mark[1])],
    }
    return pack(MAGIC, head_, spec.z)


def read(data: bytes) -> tuple[dict[str, Any], np.ndarray]:
    """The header and the (rows, cols) float32 map of a `map_payload`."""
    return unpack(data, MAGIC, "token map")


def waits_for(after: tuple[str, int] | None) -> Json | None:
    """A canvas header's `after`: the element of the page (a CSS selector) its first draw waits
    for, at most so many milliseconds; None: drawn at once."""
    return None if after is None else {"selector": after[0], "wait_ms": int(after[1])}


def pack(magic: bytes, head: Json, z: np.ndarray) -> bytes:
    """A canvas chart's message: `magic`, the JSON header's length and text, padding, float32 `z`
    (the app's canvas_common.js `parse`)."""
    text = json.dumps(head, ensure_ascii=False).encode("utf-8")
    start = 8 + len(text)
    body = np.ascontiguousarray(z, dtype="<f4").tobytes()
    return magic + struct.pack("<I", len(text)) + text + b"\0" * (-start % 4) + body


def unpack(data: bytes, magic: bytes, what: str) -> tuple[dict[str, Any], np.ndarray]:
    """The header and the (rows, cols) float32 array of a `pack`ed message (`what`: its name)."""
    if data[:4] != magic:
        raise ValueError(f"not a {what} payload")
    (length,) = struct.unpack("<I", data[4:8])
    head = json.loads(data[8 : 8 + length].decode("utf-8"))
    start = 8 + length + (-(8 + length) % 4)
    rows, cols = head["shape"]
    z = np.frombuffer(data, dtype="<f4", count=rows * cols, offset=start).reshape(rows, cols)
    return head, z
