"""Numbers as JSON text fast: `json_numbers` writes a numeric array as a nested JSON list, every
number with at most a given count of significant digits, as Python's "{:.{digits}g}" would, built
in numpy."""

from __future__ import annotations

import json

import numpy as np

SIGNIFICANT_DIGITS = 6


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
        opens, closes = np.ones((2, r1 - r0), dtype=np.int64)
        first, last = np.ones((2, r1 - r0), dtype=bool)
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
