"""The explorer's sections: one sentence, every layer and head, four views of the focus (the head
and graph views behind an expander, computed only once it is opened)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from ... import i18n, lab, views
from ...focus import default_focus
from ...result import Attention
from ...views import decoder as decoder_views
from ...views.ablation import mark_off
from .. import charts, downloads, redraw, subject, urls, widgets, work
from ..canvas import grid_canvas, token_canvas
from ..coldstart import warmup
from ..state import SENTENCE_TEXT_AREA, Ctx, lang, t
from ..subject import Focus
from . import sinks, why

THUMB = 32  # model-view thumbnails of at most 32 x 32 cells: 72 heads at 512 tokens stay ~0.5 MB
DEFAULTS: tuple[tuple[str, object], ...] = (("hide_special", False), ("merge_words", False), ("color_range", "fixed"),
                                            ("threshold", 0.1), ("hv_heads", []))  # fmt: skip


def analysis(context: Ctx, text: str) -> Focus | None:
    """`text` (the page's sentence box) through the model, the layer/head and view switches, then
    the (cached) analysis."""
    session = st.session_state
    for name, default in DEFAULTS:
        session.setdefault(name, default)
    controls = st.container(key="controls")  # filled once the model is known, above its notices
    view = (bool(session["hide_special"]), bool(session["merge_words"]))  # the switches below
    got = subject.analysis(context, text, view=view)
    if got is None:
        return None
    with controls:
        left, right = st.columns([2, 3])
        with left:
            layer, head = widgets.layer_head(got.loaded.runner.n_layers, got.loaded.runner.n_heads)
        with right:
            a, b, col = st.columns(3)
            hide = a.checkbox(t("ctl.hide_special"), key="hide_special", help=t("ctl.hide_special_help"))
            merge = b.checkbox(t("ctl.merge_words"), key="merge_words", help=t("ctl.merge_words_help"))
            color_range = col.radio(
                t("ctl.color_range"), ("fixed", "auto"), key="color_range", horizontal=True,
                format_func=widgets.option_labels("ctl.color_{}"), help=t("ctl.color_range_help"),
            )  # fmt: skip
    att = got.shown  # byte pieces merged into characters
    signature = (att.text, att.model, att.n, hide, merge)
    if session.get("_token_signature") != signature:  # new tokens: the token choices start from defaults again
        session["_token_signature"] = signature
        example = i18n.example_for(att.text, lang())
        query, key = default_focus(att, example)
        session["focus_query"], session["focus_key"] = query, key
        session["highlight"] = query if example else -1
        session.update(session.pop(urls.LINK_TOKENS, None) or {})  # a shared link's token choices win once
    opts = {"layer": layer, "head": head, "hide_special": hide, "merge_words": merge, "color_range": color_range}
    settings = downloads.run_settings(context, att, **opts)
    return Focus(got.loaded, got.text, att, layer, head, str(color_range), settings, again=got.again)


def sinks_switch(context: Ctx, focus: Focus) -> tuple[Focus, Callable[[], None]]:
    """The hide-sinks switch's place above the views and a function that draws it there later: its
    words need a second forward pass (the value norms), which the views await only while it is on."""
    slot = st.container()
    if st.session_state.get(sinks.STATE, False):
        with slot:
            return sinks.hide_switch(context, focus), lambda: None

    def later() -> None:
        with slot:
            sinks.hide_switch(context, focus)

    return focus, later


def _show(
    focus: Focus, fig: go.Figure, key: str, caveat: str, export: str, on_select: Callable[[str], None] | None = None
) -> None:
    """A view's chart (clickable when `on_select` is given), its caveat and its downloads."""
    clicks: dict[str, Any] = (
        {} if on_select is None else {"on_select": partial(on_select, key), "selection_mode": "points"}
    )
    charts.chart(redraw.lines_as_shapes(fig), key=key, **clicks)  # lines as one SVG path each: faster to draw
    widgets.caveat(caveat)
    downloads.figure_downloads(fig, export, focus.settings)


def heatmap_view(context: Ctx, focus: Focus) -> None:
    """The focused head's map on the canvas, then the Plotly imports (`warmup.warm_up`); its
    Plotly figure is made only when its HTML page is downloaded."""
    zmax = 1.0 if focus.color_range == "fixed" else None
    spec = views.heatmap_spec(focus.att, focus.layer, focus.head, zmax=zmax, lang=context.lang)
    with st.container(key="view_heatmap"):
        st.subheader(t("view.heatmap"))
        token_canvas.token_map(spec, "chart_heatmap", after=SENTENCE_TEXT_AREA, **why.map_clicks(focus.att))
        warmup.warm_up()
        widgets.caveat("caveat.heatmap")
        downloads.figure_downloads(partial(views.heatmap_figure, spec), "heatmap", focus.settings)


def grid_view(context: Ctx, focus: Focus) -> None:
    with st.container(key="view_grid"):
        st.subheader(t("view.grid"))
        in_focus = None if focus.head is None else (focus.layer, focus.head)
        thumb = decoder_views.grid_thumb(focus.att, THUMB)  # 270 heads of SmolLM2 keep the payload of 72
        # a canvas: no Plotly (24.1); like the map, drawn once the sentence box above it is
        grid_canvas.head_grid(focus.att, in_focus, thumb, focus.off, "chart_grid", after=SENTENCE_TEXT_AREA)
        widgets.caveat("aware.caveat_grid_decoder" if focus.att.causal else "caveat.grid")  # no [CLS] in a decoder
        make = partial(grid_figure, focus.again, in_focus, thumb, focus.off, context.lang)
        downloads.figure_downloads(make, "grid", focus.settings)  # its HTML page: the Plotly figure


def grid_figure(
    got: Callable[[], Attention],
    in_focus: tuple[int, int] | None,
    thumb: int,
    off: tuple[tuple[int, int], ...],
    lang: str,
) -> go.Figure:
    """The grid as a Plotly figure, for its offline HTML page: made only when it is downloaded,
    from the attention `got()` then (a download keeps no attention: app/again.py)."""
    att = got()
    fig = mark_off(views.model_view(att, focus=in_focus, thumb=thumb, lang=lang), off)
    return decoder_views.mark_groups(fig, att, lang=lang)


def more_views(context: Ctx, focus: Focus) -> None:
    """The head view and the graph view in `widgets.lazily`'s expander, kept open in the shared link too."""
    widgets.lazily(urls.VIEWS_OPEN, "lazy.views", _more_views, context, focus)


def _more_views(context: Ctx, focus: Focus) -> None:
    att = focus.att
    left, right = st.columns(2, gap="large")
    with left, st.container(key="view_head"):
        st.subheader(t("view.head"))
        h1, h2 = st.columns(2)
        chosen = h1.multiselect(
            t("ctl.hv_heads"), list(range(att.n_heads)), key="hv_heads", format_func=widgets.fmt_head,
            placeholder=t("ctl.hv_heads_placeholder"),
        )  # fmt: skip
        highlight = widgets.pick(
            t("ctl.highlight"), [-1, *range(att.n)], "highlight", box=h2,
            format_func=widgets.token_format(att.tokens, none="—"), help=t("ctl.highlight_help"),
        )  # fmt: skip
        heads = sorted(chosen) if chosen else (None if focus.head is None else [focus.head])
        fig = views.head_view(
            att, focus.layer, heads=heads, highlight=None if highlight < 0 else highlight, lang=context.lang
        )
        _show(focus, fig, "chart_head_view", "caveat.head_view", "head-view", on_select=charts.highlight_from_chart)
    with right, st.container(key="view_graph"):
        st.subheader(t("view.graph"))
        threshold = st.slider(
            t("ctl.threshold"), min_value=0.0, max_value=1.0, step=0.01, key="threshold", help=t("ctl.threshold_help")
        )
        fig = views.graph_view(att, focus.layer, focus.head, threshold=threshold, lang=context.lang)
        _show(focus, fig, "chart_graph", "caveat.graph", "graph")


def token_focus_section(context: Ctx, focus: Focus) -> None:
    att = focus.att
    with st.container(key="token_focus"):
        st.subheader(t("focus.title"))
        st.caption(t("focus.intro"))
        # below the fold: computed and sent only once the visitor opens it
        if not st.toggle(t("focus.open"), key="focus_open", help=t("focus.open_help")):
            return
        a, b = st.columns(2)
        fmt = widgets.token_format(att.tokens)
        query = widgets.pick(t("focus.query"), range(att.n), "focus_query", box=a, format_func=fmt)
        key_token = widgets.pick(t("focus.key"), range(att.n), "focus_key", box=b, format_func=fmt)
        fig = views.token_focus(att, query, key_token, top=12, lang=context.lang)
        _show(focus, fig, "chart_focus", "caveat.focus", "token-focus", on_select=charts.focus_from_chart)


def cost_section(context: Ctx, focus: Focus) -> None:
    att, session = focus.att, st.session_state
    with st.container(key="cost"):
        st.subheader(t("cost.title"))
        numbers = att.n_layers * att.n_heads * att.n * att.n
        a, b, col = st.columns(3)
        a.metric(t("cost.tokens"), f"{att.n:,}")
        b.metric(t("cost.numbers"), f"{numbers:,}", help=t("cost.numbers_help", L=att.n_layers, H=att.n_heads, n=att.n))
        col.metric(t("cost.mb"), f"{numbers * 4 / 2**20:,.2f}")
        mb2 = f"{4 * numbers * 4 / 2**20:,.1f}"
        st.caption(t("cost.explain", L=att.n_layers, H=att.n_heads, n=att.n, n2=2 * att.n, mb2=mb2))
        if st.button(t("cost.measure"), key="cost_measure", help=t("cost.measure_help")):  # heavy: queued
            sweep = work.run_long(context, ("cost", att.model, focus.text), t("cost.measuring"),
                                  lambda _progress: lab.cost_sweep(focus.loaded.runner, focus.text, context.max_tokens))  # fmt: skip
            if sweep is not None:
                session["_cost_rows"] = (att.model, sweep)
        measured = session.get("_cost_rows")
        if measured and measured[0] == att.model and len(measured[1]) > 1:
            rows = measured[1]
            charts.chart(views.cost_sweep([vars(r) for r in rows], lang=context.lang), key="chart_cost")
            ratio = rows[-1].mb / max(rows[0].mb, 1e-12)
            growth = (rows[-1].n / rows[0].n) ** 2
            st.caption(t("cost.sweep_note", ratio=f"{ratio:,.0f}", growth=f"{growth:,.0f}"))


def numbers_section(focus: Focus) -> None:
    with st.container(key="numbers"):
        st.subheader(t("export.title"))
        st.caption(t("export.intro"))
        downloads.number_downloads(focus.again, focus.layer, focus.head, focus.settings)
        st.caption(t("slides.note"))  # the images for slides: made in the browser, nothing to install
