"""The explorer's long mode past ATTNVIZ_MAX_TOKENS: the memory full maps would take, the forward
with progress and Cancel, a head's overview whose click opens a full-resolution tile, a token's row,
the sinks and attention against distance. One result per session (hundreds of MB), released once the
session is gone (app/server/sessions.py), not when Streamlit drops a closed tab's state minutes later."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import streamlit as st

from ...long import LongAttention, attend_long, block_edges, estimate, longest
from ...long import figures as fig
from ...models.tokens import TextRefused, check_text, count_tokens
from ...views._base import escape
from .. import charts, runners, work
from ..coldstart import warmup
from ..runners import Loaded
from ..server import sessions
from ..state import Ctx, t
from ..streamlit_adapter import session_id
from ..widgets import attempt, clamp_kept, escape_md, show_error

STATE = "_long_result"  # {"key": ..., "long": LongAttention, "memo": {...}}
GO = "_long_go"  # the key of the run the visitor asked for
UPLOAD = "long_upload"
OVERVIEW = 64  # blocks a side of the overview drawn (each cell takes a click)
TILE = 64  # tokens a side of a tile at full resolution


def section(context: Ctx, text: str) -> None:
    """Past the in-memory limit, or for an uploaded .txt, the long mode with a model that reads
    that far, and the page stops there; a model that reads no further gets a notice and the
    ordinary views."""
    upload = _upload(context)
    source = upload if upload is not None else text
    try:
        check_text(source, context.settings.max_chars)
    except TextRefused:
        return  # the explorer says why
    memory = context.settings.max_tokens
    if upload is None and len(source.encode("utf-8", "surrogatepass")) + 8 <= memory:
        return  # at most a token a byte, and a few special ones: within the limit without loading
    loaded = runners.load_runner(context)
    if loaded is None:
        return
    n_tokens = _count(loaded, source)
    if n_tokens <= memory and upload is None:
        return
    limit = longest(loaded.runner)
    if limit <= memory:
        words = {"model": loaded.runner.name, "limit": f"{limit:,}", "n": f"{n_tokens:,}"}
        st.info(t("long.model_short", **words), icon=":material/info:")
        return
    warmup.warm_up()  # before the long mode's figures (the explorer's loading() leaves it to its views)
    n = min(n_tokens, limit)
    est = estimate(loaded.runner, n)
    with st.container(key="long_mode"):
        st.subheader(t("long.title"))
        st.info(t("long.estimate", n=f"{n_tokens:,}", memory=f"{memory:,}", kept=f"{n:,}", full=_size(est.full_bytes),
                  keeps=_size(est.kept_bytes)), icon=":material/memory:")  # fmt: skip
        if n < n_tokens:
            st.warning(t("long.truncated", kept=f"{n:,}", total=f"{n_tokens:,}"), icon=":material/content_cut:")
        held = _result(context, loaded, source, limit)
        if held is not None:
            _views(context, held)
    st.stop()


def _upload(context: Ctx) -> str | None:
    limit = context.settings.corpus_upload_mb
    with st.expander(t("long.upload_title"), expanded=st.session_state.get(UPLOAD) is not None):
        got = st.file_uploader(
            t("long.upload", mb=limit), type=["txt"], key=UPLOAD, max_upload_size=limit, help=t("long.upload_help")
        )
        st.caption(t("upload.over_limit", mb=limit))  # the browser's own refusal is in English
    if got is None:
        return None
    try:
        text = got.getvalue().decode("utf-8")
    except UnicodeDecodeError:
        show_error(t("long.not_utf8"))
        return None
    return runners.checked_text(context, text.lstrip("\ufeff"))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _count(loaded: Loaded, text: str) -> int:
    """Tokens of the whole text (memoised for the session: each rerun would tokenise it again)."""
    memo = st.session_state.setdefault("_long_counts", {})
    key = (loaded.key, _digest(text))
    if key not in memo:
        memo.clear()
        memo[key] = count_tokens(loaded.runner.tokenizer, text)
    return int(memo[key])


def _size(n_bytes: int) -> str:
    return f"{n_bytes / 1e9:,.1f} GB" if n_bytes >= 1e9 else f"{n_bytes / 1e6:,.0f} MB"


def _result(context: Ctx, loaded: Loaded, text: str, limit: int) -> dict[str, Any] | None:
    """The session's long result for this text and model: kept, computed now (asked for), or
    a button that asks."""
    key = (loaded.key, _digest(text), limit)
    held = st.session_state.get(STATE)
    if held and held["key"] == key:  # emptied: released after its session was seen gone
        return dict(held)
    st.button(t("long.run"), key="long_run", type="primary", on_click=_ask, args=(key,))
    if st.session_state.get(GO) != key:
        return None
    st.session_state.pop(STATE, None)  # the previous result goes before the new one is made
    sessions.unwatch(session_id(), STATE)  # and with it the watch that held it

    def run(progress: Any) -> LongAttention:
        return attend_long(loaded.runner, text, max_tokens=limit, progress=lambda d, total: progress(d / total))

    size_mb = estimate(loaded.runner, limit).kept_bytes / 2**20  # what the result keeps, at most
    long = attempt(
        lambda: work.run_long(context, ("long", key), t("long.running"), run, size_mb=size_mb),
        "long mode",
        message=t("err.bad_input"),
    )
    if long is None:
        return None
    st.session_state.pop(GO, None)
    held = {"key": key, "long": long, "memo": {}}
    st.session_state[STATE] = held
    sessions.watch(session_id(), STATE, held.clear)
    return dict(held)


def _ask(key: tuple[Any, ...]) -> None:
    st.session_state[GO] = key


def _memo(held: dict[str, Any], name: str, *parts: Any, fn: Any) -> Any:
    memo = held["memo"]
    if (name, *parts) not in memo:
        memo[(name, *parts)] = fn()
    return memo[(name, *parts)]


def _views(context: Ctx, held: dict[str, Any]) -> None:
    long: LongAttention = held["long"]
    lang = context.lang
    for key, top in [("long_layer", long.layers - 1), ("long_head", long.heads - 1), ("long_token", long.n - 1),
                     ("long_tile_row", long.n - 1), ("long_tile_col", long.n - 1)]:  # fmt: skip
        clamp_kept(key, 0, top)  # an earlier, longer or larger result's values brought within this one
    st.caption(t("long.done", n=f"{long.n:,}", layers=long.layers, heads=long.heads, kept=_size(long.kept_bytes)))
    left, right = st.columns(2)
    layer = int(left.selectbox(t("long.layer"), range(long.layers), key="long_layer"))
    head = int(right.selectbox(t("long.head"), range(long.heads), key="long_head"))
    name = t("long.which", layer=layer, head=head)
    overview, received = _memo(held, "summary", layer, head, fn=lambda: long.summary(layer, head, OVERVIEW))
    block = int(np.diff(block_edges(long.n, OVERVIEW)).max())
    with st.container(key="long_overview_box"):
        title = t("long.overview_title", which=name, blocks=overview.shape[0], size=block)
        figure = fig.overview_figure(overview, long.n, OVERVIEW, title, lang)
        charts.chart(figure, key="long_overview", on_select=_open_tile, selection_mode="points")
        st.caption(t("long.overview_caption"))
    _tile(context, long, layer, head, name)
    _row(context, long, layer, head, name)
    _sinks(context, long, received, name)
    _distance(context, held, layer)


def _open_tile() -> None:
    """on_select: a click on the overview opens the tile that starts at that cell (whatever a
    client sends: positions that are no numbers are ignored, others clamped in `_views`)."""
    event = st.session_state.get("long_overview")
    selection = event.get("selection") if isinstance(event, Mapping) else None
    points = selection.get("points") if isinstance(selection, Mapping) else None
    if not isinstance(points, list) or not points or not isinstance(points[0], Mapping):
        return
    row, col = _position(points[0].get("y")), _position(points[0].get("x"))
    if row is not None and col is not None:
        st.session_state["long_tile_row"], st.session_state["long_tile_col"] = row, col


def _position(value: Any) -> int | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(min(max(number, 0.0), 1e9)) if math.isfinite(number) else None


def _tile(context: Ctx, long: LongAttention, layer: int, head: int, name: str) -> None:
    top = max(long.n - 1, 0)
    left, right = st.columns(2)
    row = int(left.number_input(t("long.tile_row"), 0, top, key="long_tile_row", step=TILE))
    col = int(right.number_input(t("long.tile_col"), 0, top, key="long_tile_col", step=TILE))
    rows = range(row, min(long.n, row + TILE))
    cols = range(col, min(long.n, col + TILE))
    tile = long.tile(layer, head, rows, cols)
    title = t("long.tile_title", which=name, r0=rows.start, r1=rows.stop - 1, c0=cols.start, c1=cols.stop - 1)
    with st.container(key="long_tile_box"):
        charts.chart(fig.tile_figure(tile, long, rows, cols, title, context.lang), key="long_tile")


def _row(context: Ctx, long: LongAttention, layer: int, head: int, name: str) -> None:
    st.subheader(t("long.row_title"))
    st.session_state.setdefault("long_token", long.n - 1)
    token = int(st.number_input(t("long.token"), 0, long.n - 1, key="long_token"))
    row = long.rows(layer, head, [token])[0]
    title = t("long.row_fig", which=name, token=escape(long.tokens[token][:40]), i=token)
    charts.chart(fig.positions_figure(row, long, title, "long.fig_weight", context.lang), key="long_row")
    st.caption(t("long.row_caption", token=escape_md(long.tokens[token], 40), i=token))
    st.dataframe(_table(long, row), hide_index=True)


def _table(long: LongAttention, values: np.ndarray) -> Any:
    import pandas as pd

    idx = np.argsort(-values)[:8]
    tokens, weights = [long.tokens[int(i)] for i in idx], np.round(values[idx].astype(np.float64), 4)
    return pd.DataFrame(
        {t("long.col_position"): idx.astype(int), t("long.col_token"): tokens, t("long.col_weight"): weights}
    )


def _sinks(context: Ctx, long: LongAttention, received: np.ndarray, name: str) -> None:
    st.subheader(t("long.sinks_title"))
    charts.chart(
        fig.positions_figure(received, long, t("long.sinks_fig", which=name), "long.fig_received", context.lang),
        key="long_received",
    )
    table = _table(long, received)
    most = float(table.iloc[0, 2])  # the weight as the table's first row shows it
    st.caption(t("long.sinks_caption", n=f"{long.n:,}", weight=f"{most:,.2f}", share=fig.percent(most / long.n)))
    st.dataframe(table, hide_index=True)


def _distance(context: Ctx, held: dict[str, Any], layer: int) -> None:
    long: LongAttention = held["long"]
    st.subheader(t("long.distance_title"))
    if not st.checkbox(t("long.distance_toggle", heads=long.heads), key="long_distance"):
        return
    with st.spinner(t("long.distance_running")):
        profiles = [
            _memo(held, "distance", layer, h, fn=lambda h=h: long.distance(layer, h)) for h in range(long.heads)
        ]
    title = t("long.distance_fig", layer=layer)
    charts.chart(fig.distance_figure(profiles, long.causal, title, context.lang), key="long_distance_fig")
    st.caption(t("long.distance_caption"))
