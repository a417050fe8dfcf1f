"""The Explain page's whole-layer evidence (contribution maps; the faithfulness scoreboard with
its deletion curves, the best method for this sentence and the doubts about the metrics) and
the Caveats page's average scoreboard over the bundled sentences."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import streamlit as st

from ... import explain, views
from ...explain import Contributions, Scoreboard
from ...explain.removal_lm import is_lm
from ...models import Progress
from ...result import merge_word_matrix
from ...views.evidence import method_label
from .. import charts, literal, nav, widgets, work
from ..sidebar import model_label
from ..state import Ctx, lang, t
from ..subject import Subject
from .explain import attempt, code_span

AVERAGE_FILE = nav.ROOT / "assets" / "faithfulness_average.json"
AVERAGE_COMMAND = "python bench/bench_faithfulness.py"
CHEAP = ("attention", "norm", "globenc", "alti")  # one recorded forward for all four
SCOREBOARD_COLUMNS = {"spearman": "fx.col_spearman", "kendall": "fx.col_kendall", "aopc": "fx.col_aopc",
                      "aopc_over_random": "fx.col_over_random"}  # fmt: skip
AVERAGE_COLUMNS = {"spearman": "fx.col_spearman", "aopc": "fx.col_aopc", "aopc_over_random": "fx.col_over_random",
                   "best_count": "fx.col_best"}  # fmt: skip
SOURCES = (
    ("DeYoung et al. 2020", "ERASER: A Benchmark to Evaluate Rationalized NLP Models", "https://arxiv.org/abs/1911.03429"),
    ("Samek et al. 2017", "Evaluating the visualization of what a deep neural network has learned", "https://arxiv.org/abs/1509.06321"),
    ("Hooker et al. 2019", "A Benchmark for Interpretability Methods in Deep Neural Networks", "https://arxiv.org/abs/1806.10758"),
    ("Jacovi & Goldberg 2020", "Towards Faithfully Interpretable NLP Systems", "https://arxiv.org/abs/2004.03685"),
    ("Edin et al. 2024", "Normalized AOPC: Fixing Misleading Faithfulness Metrics", "https://arxiv.org/abs/2408.08137"),
    ("Modarressi et al. 2022", "GlobEnc", "https://arxiv.org/abs/2205.03286"),
    ("Ferrando et al. 2022", "Measuring the Mixing of Contextual Information in the Transformer (ALTI)", "https://arxiv.org/abs/2203.04212"),
    ("Mohebbi et al. 2023", "Quantifying Context Mixing in Transformers (Value Zeroing)", "https://arxiv.org/abs/2301.12971"),
)  # fmt: skip


def _labels() -> Callable[[str], str]:
    """A format_func bound to this run's language (Streamlit may call it outside the run)."""
    language = lang()
    return lambda method: method_label(method, language)


def _methods(causal: bool) -> list[str]:
    """The contribution methods a model can take: GlobEnc reads a post-LN encoder's layers."""
    return [m for m in explain.CONTRIBUTION_METHODS if m != "globenc" or not causal]


def _contributions(context: Ctx, s: Subject, method: str) -> Contributions | None:
    """The closed-form methods from one cached forward, Value Zeroing alone (at most the deployment's
    explanation length and its own cap); with progress, Cancel, budget and a notice when the text was cut."""
    runner, closed = s.loaded.runner, method in CHEAP
    methods = [m for m in CHEAP if m in _methods(runner.causal)] if closed else [method]
    cap = context.settings.explain_tokens  # the deployment's bound on explanation work (demo: 128)
    limit = cap if closed else min(cap, explain.VALUE_ZEROING_MAX_TOKENS)

    def compute(progress: Progress) -> dict[str, Contributions]:
        return explain.contributions_all(runner, s.fitted, methods, max_tokens=limit, progress=progress)

    kind = "contributions" if closed else "value_zeroing"
    label = t("cx.computing" if closed else "cx.computing_vz", n=min(s.att.n, limit))
    found = attempt(s, lambda: work.cached_long(context, s.loaded, kind, s.fitted, limit, label=label, fn=compute))
    if found is None:
        return None
    if found[method].truncated:
        st.info(t("cx.cut" if closed else "cx.vz_cut", kept=found[method].n, total=s.att.n, limit=limit), icon="✂️")
    return found[method]


def contribution_section(context: Ctx, s: Subject, layer: int) -> None:
    """One whole-layer method's map: the chosen layer's own mixing, or traced to the input."""
    with st.container(key="explain_contributions"):
        st.subheader(t("cx.title"))
        st.caption(t("cx.intro"))
        a, b = st.columns(2)
        methods = _methods(s.loaded.runner.causal)  # GlobEnc, picked for an encoder, goes back to the first
        method = widgets.pick(t("cx.method"), methods, "cx_method", box=a, format_func=_labels())
        view = b.radio(t("cx.view"), ("traced", "layer"), key="cx_view", horizontal=True,
                       format_func=widgets.option_labels("cx.view_{}"))  # fmt: skip
        contrib = _contributions(context, s, str(method))
        if contrib is None:
            return
        shown = None if view == "traced" else min(layer, contrib.n_layers - 1)
        fig = views.contribution_map(_characters(s, contrib), shown, lang=context.lang)
        charts.chart(fig, key="chart_contributions")
        st.caption(t(f"cx.about_{method}"))


def _characters(s: Subject, c: Contributions) -> Contributions:
    """`c` over the page's token list, byte pieces merged as `merge_characters` merges attention
    (columns summed, rows averaged: rows still sum to 1)."""
    if s.shown is s.att:
        return c
    groups = [kept for g in s.groups if (kept := [i for i in g if i < c.n])]
    return replace(
        c,
        tokens=[s.shown.tokens[j] for j, g in enumerate(s.groups) if g[0] < c.n],
        per_layer=merge_word_matrix(c.per_layer, groups),
        rolled_layers=merge_word_matrix(c.rolled_layers, groups),
        special=np.array([bool(c.special[g[0]]) for g in groups]),
    )


def _board(context: Ctx, s: Subject, query: int) -> Scoreboard | None:
    """The scoreboard of the output picked here: the sentence embedding (an encoder) or the next
    token after the text (a decoder, its default); else the chosen token's own vector, or for a
    decoder the token after it."""
    limit = min(context.settings.explain_tokens, explain.FAITHFULNESS_MAX_TOKENS)
    runner = s.loaded.runner
    lm = is_lm(runner)
    labels = {
        "sentence": t("aware.fx_output_next") if lm else t("fx.output_sentence"),
        "token": t("aware.fx_output_after") if lm else t("fx.output_token"),
    }
    choice = st.radio(t("fx.output"), tuple(labels), key="fx_output", horizontal=True, format_func=labels.__getitem__,
                      help=t("aware.fx_output_help_lm") if lm else t("fx.output_help"))  # fmt: skip
    target = None if choice == "sentence" else query  # None: the sentence embedding or the next token
    if target is not None and target >= limit:
        st.info(t("aware.fx_query_beyond_lm" if lm else "fx.query_beyond", limit=limit), icon="✂️")
        target = None

    def score(progress: Progress) -> Scoreboard:
        return explain.faithfulness(runner, s.fitted, target, max_tokens=limit, progress=progress)

    label = t("fx.computing", n=min(s.att.n, limit))
    board = attempt(
        s, lambda: work.cached_long(context, s.loaded, "faithfulness", s.fitted, target, limit, label=label, fn=score)
    )
    if board is not None and board.truncated:
        st.info(t("fx.cut", kept=len(board.tokens), total=board.n_input_tokens), icon="✂️")
    return board


def _number(v: object) -> str:
    """A table cell: three decimals, or a dash where there is no value (never Python's None)."""
    v = v.item() if isinstance(v, np.generic) else v
    if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(v):
        return "—"
    return f"{v:.3f}" if isinstance(v, float) else f"{v:,}"


def _rows(rows: list[dict[str, Any]], columns: dict[str, str]) -> list[dict[str, str]]:
    """A table's rows: the method, then each of `columns` (field: its header's key) as `_number` writes it."""
    label = _labels()
    return [{t("fx.col_method"): label(str(r["method"])), **{t(c): _number(r.get(k)) for k, c in columns.items()}}
            for r in rows]  # fmt: skip


def scoreboard_section(context: Ctx, s: Subject, query: int) -> None:
    """Which picture of "where information comes from" tracks what the model does?"""
    with st.container(key="explain_scoreboard"):
        st.subheader(t("fx.title"))
        lm = is_lm(s.loaded.runner)
        st.caption(t("aware.fx_intro_lm") if lm else t("fx.intro"))
        board = _board(context, s, query)
        if board is None:
            return
        if lm:  # which token's log-probability every number below is about
            st.caption(t("aware.fx_target", token=code_span(board.target)))
        # the table across the page (its five columns and Chinese values are not cut), the curves under it
        st.dataframe(_rows(board.table(), SCOREBOARD_COLUMNS), hide_index=True, key="table_scoreboard")
        position = None if board.query is None else s.index(board.query)  # numbered as the token list
        fig = views.deletion_curves(board, highlight=board.best, position=position, lang=context.lang)
        charts.chart(fig, key="chart_deletion")
        best = board.row(board.best)
        floor = board.row("random").aopc
        key = "fx.best" if best.aopc > floor + board.random_aopc_std else "fx.best_weak"
        label = _labels()
        names = ", ".join(label(m) for m in board.leaders)
        st.markdown(t(key, method=names, aopc=f"{best.aopc:.3f}", floor=f"{floor:.3f}"))
        if len(board.leaders) > 1:
            st.caption(t("fx.tied"))
        ranked = board.best_by_rank
        if ranked is not None and ranked != board.best:
            st.markdown(t("fx.best_rank", method=label(ranked), rho=f"{board.row(ranked).spearman:.2f}"))
        charts.chart(views.layer_agreement(board, position=position, lang=context.lang), key="chart_layer_agreement")
        with st.container(key="scoreboard_doubts", border=True):  # the metrics are themselves debated: sources
            st.markdown(f"**{t('fx.doubt_title')}**")
            st.markdown(t("fx.doubt_body"))
            st.markdown("\n".join(f"- {who}: [{title}]({url})" for who, title, url in SOURCES))


def _average() -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(AVERAGE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data.get("rows"), list) else None


def average_scoreboard(context: Ctx) -> None:
    """The scoreboard averaged over the bundled sentences, from the file the benchmark writes."""
    with st.container(key="caveats_average"):
        st.subheader(t("fx.average_title"))
        data = _average()
        if data is None:
            st.info(t("fx.average_missing"), icon="ℹ️")
            literal.literal(AVERAGE_COMMAND)
            return
        st.dataframe(_rows(data["rows"], AVERAGE_COLUMNS), hide_index=True, key="table_average")
        model, output = model_label(str(data.get("model", "?"))), str(data.get("output", "?"))
        if output.startswith("sentence embedding"):  # the benchmark file names it in English
            output = t("fx.output_sentence")
        # how to recompute it (the benchmark's command) is for developers: bench/README.md
        st.caption(t("fx.average_note", n=data.get("sentences", 0), model=model, output=output))
        st.page_link(nav.page("explain", context.lang), label=t("fx.to_explain"), icon="📊")
