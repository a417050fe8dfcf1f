"""Explorer (the landing page): one sentence, every layer and head, four views of the focus."""

from __future__ import annotations

import time
from functools import partial

import streamlit as st

from app_pages import common
from app_pages.common import t
from attnviz import views

c = common.ctx()
ss = st.session_state
for key, default in (
    ("hide_special", False),
    ("merge_words", False),
    ("color_range", "fixed"),
    ("threshold", 0.1),
    ("hv_heads", []),
):
    ss.setdefault(key, default)

st.title(t("explorer.title"))
st.caption(t("explorer.intro"))
common.show_notices()
text = common.sentence_box(c)

loaded = common.load_runner(c)
clean = common.checked_text(c, text)
if loaded is None or clean is None:
    st.stop()
runner = loaded[0]

with st.container(key="controls"):
    left, right = st.columns([2, 3])
    with left:
        layer, head = common.layer_head(runner.n_layers, runner.n_heads)
    with right:
        a, b, col = st.columns(3)
        hide_special = a.checkbox(t("ctl.hide_special"), key="hide_special", help=t("ctl.hide_special_help"))
        merge_words = b.checkbox(t("ctl.merge_words"), key="merge_words", help=t("ctl.merge_words_help"))
        color_range = col.radio(
            t("ctl.color_range"),
            ("fixed", "auto"),
            key="color_range",
            format_func=common.option_labels("ctl.color_{}"),
            horizontal=True,
            help=t("ctl.color_range_help"),
        )

att = common.analyse(c, loaded, clean, hide_special=hide_special, merge_words=merge_words)
if att is None:
    st.stop()
common.truncation_notice(att)
common.show_tokens(att.tokens)

# Token-dependent choices start again from sensible defaults when the tokens change.
signature = (att.text, att.model, att.n, hide_special, merge_words)
if ss.get("_token_signature") != signature:
    ss["_token_signature"] = signature
    example = common.example_for(att.text)
    q = common.find_token(att.tokens, example["query"]) if example else None
    k = common.find_token(att.tokens, example["key"]) if example else None
    ordinary = [i for i in range(att.n) if not att.special[i]] or list(range(att.n))
    ss["focus_query"] = q if q is not None else ordinary[-1]
    ss["focus_key"] = k if k is not None else ordinary[0]
    ss["highlight"] = -1 if q is None else q
settings = common.run_settings(
    c, att, layer=layer, head=head, hide_special=hide_special, merge_words=merge_words, color_range=color_range
)


def _retitle(fig: object, title: str) -> None:
    """Translate a figure's main title, keeping the note views.py puts under it."""
    current = fig.layout.title.text or ""  # type: ignore[attr-defined]
    note = current.split("<br>", 1)[1] if "<br>" in current else ""
    fig.update_layout(title_text=title + (f"<br>{note}" if note else ""))  # type: ignore[attr-defined]


def _which(head_: int | None) -> str:
    return t("ctl.mean_heads") if head_ is None else t("ctl.head_n", n=head_)


st.divider()
top_left, top_right = st.columns(2, gap="large")
with top_left, st.container(key="view_heatmap"):
    st.subheader(t("view.heatmap"))
    fig = views.heatmap(
        att,
        layer,
        head,
        zmax=1.0 if color_range == "fixed" else None,
        title=t("view.heatmap_title", layer=layer, which=_which(head)),
    )
    fig.update_xaxes(title_text=t("axis.key"))
    fig.update_yaxes(title_text=t("axis.query"))
    common.chart(fig, key="chart_heatmap")
    common.caveat("caveat.heatmap")
    common.figure_downloads(fig, "heatmap", settings)

with top_right, st.container(key="view_grid"):
    st.subheader(t("view.grid"))
    thumb = 32  # thumbnails of at most 32 x 32 cells: 72 heads at 512 tokens stay ~0.5 MB
    fig = views.model_view(att, focus=None if head is None else (layer, head), thumb=thumb)
    shrunk = t("view.grid_shrunk", t=thumb) if att.n > thumb else ""
    fig.update_layout(title_text=t("view.grid_title", layers=att.n_layers, heads=att.n_heads, n=att.n) + shrunk)
    common.chart(
        fig,
        key="chart_grid",
        on_select=partial(common.focus_from_chart, "chart_grid"),
        selection_mode="points",
    )
    common.caveat("caveat.grid")
    common.figure_downloads(fig, "grid", settings)

bottom_left, bottom_right = st.columns(2, gap="large")
with bottom_left, st.container(key="view_head"):
    st.subheader(t("view.head"))
    h1, h2 = st.columns(2)
    hv_heads = h1.multiselect(
        t("ctl.hv_heads"),
        list(range(att.n_heads)),
        key="hv_heads",
        format_func=common.fmt_head,
        placeholder=t("ctl.hv_heads_placeholder"),
    )
    if ss.get("highlight") not in range(-1, att.n):
        ss["highlight"] = -1
    highlight = h2.selectbox(
        t("ctl.highlight"),
        [-1, *range(att.n)],
        key="highlight",
        format_func=common.token_format(att.tokens, none="—"),
        help=t("ctl.highlight_help"),
    )
    heads = sorted(hv_heads) if hv_heads else (None if head is None else [head])
    fig = views.head_view(att, layer, heads=heads, highlight=None if highlight < 0 else highlight, lang=c.lang)
    shown_heads = t("ctl.all_heads") if heads is None else ", ".join(t("ctl.head_n", n=h) for h in heads)
    _retitle(fig, t("view.head_title", layer=layer, which=shown_heads))
    common.chart(
        fig,
        key="chart_head_view",
        on_select=partial(common.highlight_from_chart, "chart_head_view"),
        selection_mode="points",
    )
    common.caveat("caveat.head_view")
    common.figure_downloads(fig, "head-view", settings)

with bottom_right, st.container(key="view_graph"):
    st.subheader(t("view.graph"))
    threshold = st.slider(
        t("ctl.threshold"), min_value=0.0, max_value=1.0, step=0.01, key="threshold", help=t("ctl.threshold_help")
    )
    fig = views.graph_view(att, layer, head, threshold=threshold, lang=c.lang)
    _retitle(fig, t("view.graph_title", layer=layer, which=_which(head)))
    common.chart(fig, key="chart_graph")
    common.caveat("caveat.graph")
    common.figure_downloads(fig, "graph", settings)

st.divider()
with st.container(key="token_focus"):
    st.subheader(t("focus.title"))
    st.caption(t("focus.intro"))
    for key in ("focus_query", "focus_key"):
        if ss.get(key) not in range(att.n):
            ss[key] = 0
    a, b = st.columns(2)
    query = a.selectbox(t("focus.query"), range(att.n), key="focus_query", format_func=common.token_format(att.tokens))
    key_token = b.selectbox(t("focus.key"), range(att.n), key="focus_key", format_func=common.token_format(att.tokens))
    fig = views.token_focus(att, query, key_token, top=12, lang=c.lang)
    _retitle(fig, t("focus.chart_title", layers=att.n_layers, heads=att.n_heads))
    common.chart(
        fig, key="chart_focus", on_select=partial(common.focus_from_chart, "chart_focus"), selection_mode="points"
    )
    common.caveat("caveat.focus")
    common.figure_downloads(fig, "token-focus", settings)

st.divider()
with st.container(key="cost"):
    st.subheader(t("cost.title"))
    numbers = att.n_layers * att.n_heads * att.n * att.n
    a, b, col = st.columns(3)
    a.metric(t("cost.tokens"), f"{att.n:,}")
    b.metric(t("cost.numbers"), f"{numbers:,}", help=t("cost.numbers_help", L=att.n_layers, H=att.n_heads, n=att.n))
    col.metric(t("cost.mb"), f"{numbers * 4 / 2**20:,.2f}")
    st.caption(
        t("cost.explain", L=att.n_layers, H=att.n_heads, n=att.n, n2=2 * att.n, mb2=f"{4 * numbers * 4 / 2**20:,.1f}")
    )
    if st.button(t("cost.measure"), key="cost_measure", help=t("cost.measure_help")):
        rows = []
        base = clean.split() or ["word"]
        for n in (16, 32, 64, 128, 256, 512):
            if n > min(c.max_tokens, runner.max_tokens):
                break
            words = (base * (n // len(base) + 2))[: n * 2]
            start = time.perf_counter()
            measured = runner.attend(" ".join(words), n)
            rows.append(
                {"n": measured.n, "forward_s": time.perf_counter() - start, "mb": measured.weights.nbytes / 2**20}
            )
        ss["_cost_rows"] = (att.model, rows)
    measured_rows = ss.get("_cost_rows")
    if measured_rows and measured_rows[0] == att.model and len(measured_rows[1]) > 1:
        fig = views.cost_sweep(measured_rows[1])
        _retitle(fig, t("cost.sweep_title"))
        common.chart(fig, key="chart_cost")
        ratio = measured_rows[1][-1]["mb"] / max(measured_rows[1][0]["mb"], 1e-12)
        growth = (measured_rows[1][-1]["n"] / measured_rows[1][0]["n"]) ** 2
        st.caption(t("cost.sweep_note", ratio=f"{ratio:,.0f}", growth=f"{growth:,.0f}"))

st.divider()
with st.container(key="numbers"):
    st.subheader(t("export.title"))
    st.caption(t("export.intro"))
    common.number_downloads(att, layer, head, settings)
    common.image_export_note()
