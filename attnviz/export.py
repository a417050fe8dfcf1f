"""Exports: figures as self-contained HTML (Plotly JS inlined, works offline) or PNG/SVG where a
static engine exists, and the numbers as CSV / NPZ / JSON, each bundled with the settings that
produced them (text, model, layer, head, options).

Everything a visitor typed is hostile here, and every export is opened later, somewhere else:

- HTML: the settings travel as JSON in ``<script type="application/json" id="attnviz-settings">``
  with ``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\u003c`` etc., so no text can close
  the element or open a comment; read them back with ``settings_from_html`` or, in the page,
  ``JSON.parse(document.getElementById("attnviz-settings").textContent)``. Plotly escapes ``<``,
  ``>`` and ``/`` in the figure's own JSON. A Content-Security-Policy lets only the page's own
  scripts run (by SHA-256 hash) and forbids every network request.
- CSV: every line goes through ``csv.writer``; a text cell that a spreadsheet would read as a
  formula gets a leading ``'`` (see ``csv_cell``; undo with ``csv_uncell``), also one that starts
  with spaces or a full-width sign before the formula character. The text row is the analysed
  text (control characters other than tab and newline turned into spaces, as the model saw it).
- JSON: weights are written with at most 6 significant digits (see ``PRECISION``).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go

from .csv_cells import CSV_FORMULA_CHARS, CSV_FORMULA_LOOKALIKES, csv_cell, csv_uncell
from .result import Attention

__all__ = [
    "CSV_FORMULA_CHARS",
    "CSV_FORMULA_LOOKALIKES",
    "PRECISION",
    "SETTINGS_ELEMENT_ID",
    "ExportUnavailable",
    "attention_json",
    "attention_npz",
    "csv_cell",
    "csv_uncell",
    "figure_html",
    "figure_image",
    "head_csv",
    "json_numbers",
    "read_head_csv",
    "script_json",
    "settings_from_html",
    "weights_json",
]

SIGNIFICANT_DIGITS = 6
PRECISION = f"{SIGNIFICANT_DIGITS} significant digits"
SETTINGS_ELEMENT_ID = "attnviz-settings"
CSV_HEADER_CELL = "query \\ key"


class ExportUnavailable(RuntimeError):
    """No static image engine (kaleido and a Chrome) is installed here."""


# --- HTML -------------------------------------------------------------------------------------

# JSON that can sit inside any <script> element: no "<" (so no "</script>", "<!--", "<script"),
# no ">" ("-->", "]]>"), no "&", and no line separators (which old JS parsers treat as newlines).
_SCRIPT_JSON = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})
_SETTINGS_BLOCK = re.compile(
    r'<script type="application/json" id="' + SETTINGS_ELEMENT_ID + r'">(.*?)</script>', re.DOTALL
)
# plotly's own inline scripts; their text is JSON-escaped by plotly (no "<" from any data)
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)
_WEBGL_TRACES = frozenset(
    {"scattergl", "splom", "parcoords", "scatter3d", "surface", "mesh3d", "cone", "streamtube", "volume", "isosurface"}
)


def script_json(value: Any) -> str:
    """`value` as JSON text safe inside an HTML <script> element of any type."""
    return _utf8(json.dumps(value, ensure_ascii=False, default=_jsonable)).decode("utf-8").translate(_SCRIPT_JSON)


def figure_html(fig: go.Figure, settings: Mapping[str, Any] | None = None) -> str:
    """A complete HTML page with plotly.js inlined: opens with no network at all.

    `settings` ride as JSON in <script type="application/json" id="attnviz-settings"> (never in a
    comment or a script that runs). A Content-Security-Policy allows exactly the page's own
    scripts (by hash; eval too only for WebGL traces, which need it), no network and no plugins,
    so even markup that slipped in could not run.
    """
    div = fig.to_html(include_plotlyjs=True, full_html=False, config={"displaylogo": False})
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode("utf-8")).digest()).decode("ascii") + "'"
        for s in _INLINE_SCRIPT.findall(div)
    )
    if any(getattr(trace, "type", "") in _WEBGL_TRACES for trace in fig.data):
        hashes += " 'unsafe-eval'"  # regl compiles WebGL draw calls with new Function()
    csp = (
        f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data: blob:; "
        "font-src data:; base-uri 'none'; form-action 'none'"
    )
    block = ""
    if settings:
        block = f'<script type="application/json" id="{SETTINGS_ELEMENT_ID}">{script_json(dict(settings))}</script>\n'
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n"
        '<meta charset="utf-8" />\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}" />\n'
        "<title>attnviz</title>\n"
        f"{block}"
        "<style>html, body {height: 100%;}</style>\n"
        f"</head>\n<body>\n{div}\n</body>\n</html>\n"
    )


def settings_from_html(html: str) -> dict[str, Any] | None:
    """The settings a `figure_html` page carries, or None if it has none."""
    m = _SETTINGS_BLOCK.search(html)
    if m is None:
        return None
    value = json.loads(m.group(1))
    return value if isinstance(value, dict) else None


def figure_image(fig: go.Figure, fmt: str = "png", scale: float = 2.0) -> bytes:
    """PNG or SVG bytes through kaleido; ExportUnavailable with a readable reason if absent."""
    if fmt not in ("png", "svg"):
        raise ValueError("image format must be 'png' or 'svg'")
    try:
        import kaleido  # noqa: F401
    except ImportError as exc:
        raise ExportUnavailable(
            "PNG/SVG export needs the kaleido package (pip install kaleido) and a Chrome/Chromium; "
            "the HTML export works everywhere"
        ) from exc
    try:
        return bytes(fig.to_image(format=fmt, scale=scale))
    except Exception as exc:  # kaleido present but no browser it can drive
        raise ExportUnavailable(f"static image export failed here ({str(exc).splitlines()[0][:160]})") from exc


# --- CSV --------------------------------------------------------------------------------------


def head_csv(att: Attention, layer: int, head: int | None, settings: Mapping[str, Any] | None = None) -> str:
    """The focused map as CSV (RFC 4180, written by csv.writer).

    Shape: first the settings, one two-cell row each: ``# key``, value (strings as they are,
    other values as JSON: ``2``, ``true``, ``{"merge_words": false}``); then a header row
    ``query \\ key``, key tokens...; then one row per query token: the token, then n numbers.
    Text cells (keys, string values, tokens) pass through `csv_cell`; numbers are plain numbers.
    Read it back with `read_head_csv`.
    """
    m = att.head(layer, head)
    out = io.StringIO()
    w = csv.writer(out)
    for key, value in _settings(att, settings, layer=layer, head=head).items():
        cell = csv_cell(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=_jsonable)
        w.writerow([csv_cell(f"# {key}"), cell])
    w.writerow([CSV_HEADER_CELL, *map(csv_cell, att.keys)])
    for tok, row in zip(att.tokens, m, strict=True):
        w.writerow([csv_cell(tok), *(f"{x:.6g}" for x in row)])
    return out.getvalue()


def read_head_csv(text: str) -> tuple[dict[str, str], list[str], np.ndarray]:
    """(settings as text, tokens, (n, n) float64 matrix) from a `head_csv` export, un-escaped."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    start = next((i for i, r in enumerate(rows) if r and r[0] == CSV_HEADER_CELL), None)
    if start is None:
        raise ValueError(f"not an attnviz head CSV: no row starts with {CSV_HEADER_CELL!r}")
    settings = {csv_uncell(r[0])[2:]: csv_uncell(r[1]) for r in rows[:start]}
    tokens = [csv_uncell(c) for c in rows[start][1:]]
    body = rows[start + 1 :]
    matrix = np.array([[float(x) for x in r[1:]] for r in body], dtype=np.float64).reshape(len(body), len(tokens))
    return settings, tokens, matrix


# --- NPZ and JSON -----------------------------------------------------------------------------


def attention_npz(att: Attention, settings: Mapping[str, Any] | None = None) -> bytes:
    """weights (layers, heads, n, n) float32, tokens, special, and settings as a JSON string."""
    buf = io.BytesIO()
    arrays: dict[str, np.ndarray] = {"weights": att.weights, "tokens": np.array(att.tokens, dtype=str)}
    if att.cross:  # cross-attention: the columns' own tokens
        arrays["key_tokens"] = np.array(att.keys, dtype=str)
    arrays["special"] = att.special
    arrays["settings"] = np.array(json.dumps(_settings(att, settings), ensure_ascii=False, default=_jsonable))
    np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]
    return buf.getvalue()


def attention_json(
    att: Attention, settings: Mapping[str, Any] | None = None, *, layer: int | None = None, head: int | None = None
) -> str:
    """The CLI's JSON shape plus the settings: {"settings", "model", "device", "tokens",
    "truncated", "precision", "weights"}; with `layer` (and `head`) only that part, see
    `weights_json`."""
    extra = {"layer": layer} if layer is not None else {}
    if head is not None:
        extra["head"] = head
    return weights_json(att, layer=layer, head=head, settings=_settings(att, settings, **extra)).decode("utf-8")


def weights_json(
    att: Attention, *, layer: int | None = None, head: int | None = None, settings: Mapping[str, Any] | None = None
) -> bytes:
    """UTF-8 JSON: {["settings",] "model", "device", "tokens", "truncated", ["layer", ["head",]]
    "precision", "weights"}. weights is nested layers x heads x n x n; with `layer`, heads x n x n;
    with `layer` and `head`, n x n. Numbers carry at most 6 significant digits (PRECISION), built
    with numpy: a 512-token 6 x 12 export (18.9M numbers) takes seconds, not minutes."""
    if head is not None and layer is None:
        raise ValueError("a head needs a layer")
    doc: dict[str, Any] = {} if settings is None else {"settings": dict(settings)}
    doc.update(model=att.model, device=att.device, tokens=att.tokens, truncated=att.truncated)
    if att.cross:  # cross-attention: the columns are these tokens, not `tokens`
        doc["key_tokens"] = att.keys
    weights = att.weights
    if layer is not None:
        if not 0 <= layer < att.n_layers:
            raise ValueError(f"layer {layer} is out of range: valid layers are 0..{att.n_layers - 1}")
        doc["layer"] = layer
        weights = weights[layer]
        if head is not None:
            if not 0 <= head < att.n_heads:
                raise ValueError(f"head {head} is out of range: valid heads are 0..{att.n_heads - 1}")
            doc["head"] = head
            weights = weights[head]
    doc["precision"] = PRECISION
    head_text = json.dumps(doc, ensure_ascii=False, default=_jsonable)
    return _utf8(head_text[:-1]) + b', "weights": ' + json_numbers(weights) + b"}"


def json_numbers(a: np.ndarray, digits: int = SIGNIFICANT_DIGITS) -> bytes:
    """A numeric array as a nested JSON list, every number with at most `digits` significant
    digits, written as Python's "{:.{digits}g}" would (NaN and infinities as json.dumps does).

    The text is built in numpy: numbers are cut into sign, digits and exponent, laid out in a
    fixed-width byte matrix (zero bytes where nothing goes), and the zeros squeezed out.
    """
    if not 1 <= digits <= 9:
        raise ValueError("digits must be 1..9")
    a = np.asarray(a)
    if a.ndim == 0:
        return _format_flat(a.reshape(1).astype(np.float64), digits)[0].tobytes().replace(b"\0", b"")
    if a.size == 0:
        return json.dumps(a.tolist()).encode("ascii")
    n = a.shape[-1]
    lead = a.shape[:-1]
    rows = a.reshape(-1, n)
    n_rows = rows.shape[0]
    depth = a.ndim
    chunk = max(1, (1 << 19) // n)  # rows per chunk: about half a million numbers at a time
    parts: list[bytes] = []
    for r0 in range(0, n_rows, chunk):
        r1 = min(n_rows, r0 + chunk)
        cells = _format_flat(rows[r0:r1].astype(np.float64).ravel(), digits).reshape(r1 - r0, n, -1)
        sep = np.zeros((r1 - r0, n, 1), dtype=np.uint8)
        sep[:, :-1, 0] = ord(",")
        body = np.concatenate([cells, sep], axis=2).reshape(r1 - r0, -1)
        # brackets: a row opens one more "[" for every enclosing axis it starts, closes likewise
        idx = np.unravel_index(np.arange(r0, r1), lead) if lead else ()
        opens = np.ones(r1 - r0, dtype=np.int64)
        closes = np.ones(r1 - r0, dtype=np.int64)
        first = np.ones(r1 - r0, dtype=bool)
        last = np.ones(r1 - r0, dtype=bool)
        for axis in range(len(lead) - 1, -1, -1):
            first &= idx[axis] == 0
            last &= idx[axis] == lead[axis] - 1
            opens += first
            closes += last
        pre = np.where(np.arange(depth)[None, :] < opens[:, None], ord("["), 0).astype(np.uint8)
        post = np.where(np.arange(depth)[None, :] < closes[:, None], ord("]"), 0).astype(np.uint8)
        comma = np.full((r1 - r0, 1), ord(","), dtype=np.uint8)
        if r1 == n_rows:
            comma[-1, 0] = 0
        line = np.concatenate([pre, body, post, comma], axis=1).ravel()
        parts.append(line[line != 0].tobytes())
    return b"".join(parts)


def _format_flat(v: np.ndarray, p: int) -> np.ndarray:
    """(N, width) uint8: each float64 of `v` as "{:.{p}g}" text, zero bytes as padding."""
    width = p + 8
    out = np.zeros((v.size, width), dtype=np.uint8)
    finite = np.isfinite(v)
    mag = np.abs(v)
    out[np.signbit(v) & ~np.isnan(v), 0] = ord("-")
    zero = finite & (mag == 0)
    out[zero, 1] = ord("0")
    for mask, word in ((np.isnan(v), b"NaN"), (np.isinf(v), b"Infinity")):
        if mask.any():
            out[mask, 1 : 1 + len(word)] = np.frombuffer(word, dtype=np.uint8)
    live = np.flatnonzero(finite & (mag != 0))
    if live.size == 0:
        return out
    x = mag[live]
    e = np.floor(np.log10(x)).astype(np.int64)
    scaled = _scaled(x, e, p)
    m = np.rint(scaled).astype(np.int32)
    for _ in range(2):  # log10 can be one off near powers of ten, and rounding can carry
        redo = np.flatnonzero((m >= 10**p) | (m < 10 ** (p - 1)))
        if redo.size == 0:
            break
        e[redo] += np.where(m[redo] >= 10**p, 1, -1)
        scaled[redo] = _scaled(x[redo], e[redo], p)
        m[redo] = np.rint(scaled[redo]).astype(np.int32)
    # the scaling is exact to a few ulps; where that could flip a rounding (a near tie), Python's
    # correctly rounded formatting decides
    for i in np.flatnonzero(np.abs(scaled - np.floor(scaled) - 0.5) < scaled * 1e-13).tolist():
        mantissa, _, exponent = f"{x[i]:.{p - 1}e}".partition("e")
        m[i], e[i] = int(mantissa.replace(".", "")), int(exponent)
    digits = _digits(m, p)
    # significant digits kept: up to the last non-zero one (%g drops trailing zeros)
    keep = p - np.argmax(digits[:, ::-1] != 0, axis=1)
    chars = np.where(np.arange(p)[None, :] < keep[:, None], digits + ord("0"), 0).astype(np.uint8)
    low = int(e.min())
    for ex in (np.flatnonzero(np.bincount(e - low)) + low).tolist():
        sel = np.flatnonzero(e == ex)
        d, k = chars[sel], keep[sel]
        if -4 <= ex < 0:  # 0.000ddd
            lead = np.frombuffer(b"0." + b"0" * (-ex - 1), dtype=np.uint8)
            text = np.concatenate([np.broadcast_to(lead, (sel.size, lead.size)), d], axis=1)
        elif 0 <= ex < p:  # ddd.ddd
            dot = np.where(k > ex + 1, ord("."), 0).astype(np.uint8)[:, None]
            text = np.concatenate([d[:, : ex + 1], dot, d[:, ex + 1 :]], axis=1)
            text[:, : ex + 1][text[:, : ex + 1] == 0] = ord("0")  # integer part keeps its zeros
        else:  # d.ddde-XX
            dot = np.where(k > 1, ord("."), 0).astype(np.uint8)[:, None]
            tail = np.frombuffer(f"e{'-' if ex < 0 else '+'}{abs(ex):02d}".encode("ascii"), dtype=np.uint8)
            text = np.concatenate([d[:, :1], dot, d[:, 1:], np.broadcast_to(tail, (sel.size, tail.size))], axis=1)
        out[live[sel], 1 : 1 + text.shape[1]] = text
    return out


_POW10_MIN = -170
_POW10 = 10.0 ** np.arange(_POW10_MIN, -_POW10_MIN + 1, dtype=np.float64)  # 1e-170 .. 1e170


_DIGIT_TRIPLES = np.array([[ord(c) - ord("0") for c in f"{i:03d}"] for i in range(1000)], dtype=np.uint8)


def _digits(m: np.ndarray, p: int) -> np.ndarray:
    """(N, p) uint8 decimal digits of the p-digit integers `m`, three at a time from a table."""
    groups = -(-p // 3)
    out = np.empty((m.size, 3 * groups), dtype=np.uint8)
    rest = m.astype(np.int32)
    for g in range(groups - 1, -1, -1):
        high = rest // 1000
        out[:, 3 * g : 3 * g + 3] = _DIGIT_TRIPLES[rest - high * 1000]
        rest = high
    return out[:, 3 * groups - p :]


def _scaled(x: np.ndarray, e: np.ndarray, p: int) -> np.ndarray:
    """x / 10**(e - p + 1), scaling in two table steps so that every double, subnormals
    included, stays finite."""
    k = p - 1 - e
    half = k // 2
    return np.asarray(x * _POW10[half - _POW10_MIN] * _POW10[k - half - _POW10_MIN])


def _settings(att: Attention, settings: Mapping[str, Any] | None, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"text": att.text, "model": att.model, "device": att.device, "truncated": att.truncated}
    base.update(extra)
    base.update(settings or {})
    return base


def _utf8(json_text: str) -> bytes:
    """JSON text as UTF-8; a lone surrogate (undecodable input, only ever inside a string)
    becomes its JSON escape \\udXXX instead of an encoding error."""
    return json_text.encode("utf-8", "backslashreplace")


def _jsonable(value: Any) -> Any:
    """json.dumps fallback: numpy scalars and arrays as numbers and lists, anything else as text."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    return str(value)
