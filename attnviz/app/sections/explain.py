"""The Explain page's sections: how far the attention of one token explains anything. Raw
attention next to rollout, flow, norm-based weights and two attributions; their agreement; head
statistics; a minimal pair."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import numpy as np
import streamlit as st

from ... import explain, i18n, views
from ...explain import NormWeights
from ...explain.removal_lm import is_lm, lm_occlusion
from ...focus import default_focus, find_token, parse_words
from ...models import Progress, Runner
from .. import charts, downloads, runners, subject, widgets, work
from ..readers import unknown_notice
from ..runners import Loaded
from ..state import Ctx, lang, t
from ..subject import Subject

T = TypeVar("T")
AUTO_ATTRIBUTION_N = 64  # occlusion runs n forward passes: beyond this many tokens, on request
STATS = ("entropy_rel", "prev", "next", "self", "cls", "sep", "punct")


def analysis(context: Ctx) -> Subject | None:
    got = subject.analysis(context, widgets.sentence_box(context))
    if got is None:
        return None
    return Subject(got.loaded, got.text, got.loaded.runner.fit(got.text, context.max_tokens), got.att, got.shown)


def cached_norms(context: Ctx, loaded: Loaded, fitted: str) -> NormWeights:
    """Norm-based weights of `fitted` (the text as the views cut it), one cached forward shared by
    the Caveats and Explain pages and the lesson; ValueError where its layers cannot be taken apart."""
    return runners.cached(context, loaded, "norms", fitted, fn=lambda: explain.norm_weights(loaded.runner, fitted))


def attempt(s: Subject, compute: Callable[[], T | None]) -> T | None:
    """`widgets.attempt`, refusing a result that is not as long as `s`."""
    return widgets.attempt(compute, "explanation", length=s.att.n)


def pickers(s: Subject) -> tuple[int, int]:
    """The query token picked from the shown list (0..m-1) as the model's position the methods
    read (`Subject.position`), and the layer."""
    att, session = s.shown, st.session_state
    signature = (att.text, att.model, att.n)
    if session.get("_x_signature") != signature:  # a new text: its own default token
        session["_x_signature"] = signature
        session.pop("x_query", None)
    st.subheader(t("explain.token_title"))
    a, b = st.columns(2)
    fmt = widgets.token_format(att.tokens)
    default = default_focus(att, i18n.example_for(att.text, lang()))[0]
    query = widgets.pick(t("explain.query"), range(att.n), "x_query", default=default, box=a, format_func=fmt)
    layer = widgets.pick(t("explain.layer"), range(att.n_layers), "x_layer", default=att.n_layers - 1, box=b)
    return s.position(int(query)), int(layer)


def mixing_series(context: Ctx, s: Subject, query: int, layer: int) -> None:
    """Raw attention, rollout, flow (within its limit) and norm-based weights for one token."""
    att = s.att
    s.series[t("explain.raw", layer=layer)] = att.head(layer)[query]
    rollout = runners.cached(context, s.loaded, "rollout", s.fitted, fn=lambda: explain.rollout(att))
    s.series[t("explain.rollout")] = rollout[query]
    if explain.flow_limit(att.n, row=query) is None:  # heavy: queued, with progress and Cancel
        flow = work.cached_long(context, s.loaded, "flow", s.fitted, query, label=t("explain.computing_flow"),
                                fn=lambda _progress: explain.flow(att, row=query))  # fmt: skip
        if flow is not None:
            s.series[t("explain.flow")] = flow
    else:
        s.notes.append(t("explain.flow_too_large", n=att.n, limit=explain.FLOW_MAX_N_ROW))
    with st.spinner(t("explain.computing_norms")):
        norms = attempt(s, lambda: cached_norms(context, s.loaded, s.fitted).layer_norms(layer))
    if norms is not None:
        s.series[t("explain.norm", layer=layer)] = explain.share(norms[query])


def attributions(context: Ctx, s: Subject, query: int) -> np.ndarray | None:
    """Occlusion and input x gradient for one token: on request beyond AUTO_ATTRIBUTION_N tokens,
    not at all beyond the deployment's explanation limit, with progress and Cancel."""
    att, session = s.att, st.session_state
    limit = context.settings.explain_tokens
    if att.n > limit:
        s.notes.append(t("explain.attributions_capped", n=att.n, limit=limit))
        return None
    signature = (att.text, att.model, att.n)
    if att.n > AUTO_ATTRIBUTION_N and session.get("_x_attributions") != signature:
        if not st.button(t("explain.compute", n=att.n), key="x_compute"):
            s.notes.append(t("explain.attributions_on_request", n=att.n))
            return None
        session["_x_attributions"] = signature
    kind = occlusion_kind(s.loaded.runner)
    if kind is None:  # no [MASK] and no next-token head: nothing to occlude with, said before any run
        s.notes.append(t("aware.no_occlusion"))
        return None
    label = t("aware.computing_lm" if kind == "lm" else "explain.computing_attributions", n=att.n)
    fn = partial(_attributions, s.loaded.runner, s.fitted, query, kind)
    result = attempt(
        s, lambda: work.cached_long(context, s.loaded, "attributions", s.fitted, query, label=label, fn=fn)
    )
    if result is None:
        return None
    occlusion, gradient, target = result
    s.series[t("aware.occlusion_lm") if kind == "lm" else t("explain.occlusion")] = explain.share(occlusion)
    s.series[t("explain.ixg")] = explain.share(gradient)
    if kind == "lm":  # the token whose log-probability both measure, as a literal code span
        s.notes.append(t("aware.lm_target", token=code_span(target), query=s.index(query)))
    return occlusion


def occlusion_kind(runner: Runner) -> str | None:
    """How occlusion is done: "mask" (an encoder's [MASK], cosine distance of the final vector),
    "lm" (a decoder's filler token, the next token's log-probability), or None."""
    if is_lm(runner):
        return "lm"
    return "mask" if getattr(runner.tokenizer, "mask_token_id", None) is not None else None


def occlude(runner: Runner, text: str, query: int, kind: str, progress: Progress) -> np.ndarray:
    """Occlusion scores (n,) of `kind` (see `occlusion_kind`)."""
    if kind == "lm":
        return lm_occlusion(runner, text, query, progress=progress)[0]
    return explain.occlusion(runner, text, query, progress=progress)


def _attributions(
    runner: Runner, text: str, query: int, kind: str, progress: Progress
) -> tuple[np.ndarray, np.ndarray, str]:
    """Occlusion, input x gradient and (for a decoder) the next token both measure."""
    if kind == "lm":
        occ, gradient, target = lm_occlusion(runner, text, query, progress=progress)
        return occ, gradient, target.text
    return occlude(runner, text, query, kind, progress), explain.input_x_gradient(runner, text, query), ""


def code_span(token: str) -> str:
    """A token as a Markdown code span: literal inside, no backtick can close it, a control
    character shown as its code (a byte token can be one), a line break as ↵, a blank one as ␣."""
    shown = "".join(c if c.isprintable() or c.isspace() else f"\\x{ord(c):02x}" for c in token.replace("\n", "↵"))
    return "`" + (" ".join(shown.split()) or "␣")[:40].replace("`", "'").replace(":", ":\u2060") + "`"


def bars(context: Ctx, s: Subject, query: int, layer: int) -> None:
    with st.container(key="explain_bars"):
        series = {name: s.per_token(values) for name, values in s.series.items()}
        fig = views.token_bars(
            s.shown.tokens, series, title=t("explain.bars_title"), highlight=s.index(query), lang=context.lang
        )
        charts.chart(fig, key="chart_explain_bars")
        for note in s.notes:
            st.caption(note)
        st.caption(t("explain.bars_note"))
        downloads.figure_downloads(fig, "explain", downloads.run_settings(context, s.att, query=query, layer=layer))


def agreement_table(s: Subject, occlusion: np.ndarray) -> None:
    with st.container(key="explain_agreement"):
        st.subheader(t("explain.agreement_title"))
        rows = []
        for name, values in s.series.items():
            if name in (t("explain.occlusion"), t("aware.occlusion_lm")):
                continue
            agree = explain.agreement(s.per_token(values), s.per_token(occlusion), keep=s.shown)
            rows.append({t("explain.col_method"): name, t("explain.col_kendall"): round(agree["kendall"], 3),
                         t("explain.col_spearman"): round(agree["spearman"], 3)})  # fmt: skip
        st.dataframe(rows, hide_index=True, key="table_agreement")
        st.caption(t("explain.agreement_note"))


def head_statistics(context: Ctx, s: Subject) -> None:
    st.subheader(t("stats.title"))
    st.caption(t("stats.intro"))
    stats = runners.cached(context, s.loaded, "stats", s.text, fn=lambda: explain.head_stats(s.att))
    names = {stat: t(f"stats.{stat}") for stat in STATS}
    short_names = {kind: t(f"stats.l_{kind}") for kind in explain.HEAD_KINDS}
    if s.att.causal:  # a decoder has no [CLS] or [SEP]: its sink is the first token, whatever it is
        first = s.att.weights[..., 0].mean(-1).astype(np.float64)  # (L, H): column 0, mean over rows
        stats = {**stats, "cls": first, "sep": np.zeros_like(first)}
        del names["sep"]
        names["cls"], short_names["cls"] = t("aware.stats_first"), t("aware.stats_l_first")
    kinds = explain.head_kinds(stats)
    short = np.vectorize(lambda kind: short_names.get(kind, kind), otypes=[str])(kinds)
    stat = widgets.pick(t("stats.which"), tuple(names), "x_stat", format_func=names.__getitem__)
    fig = views.layer_head_grid(stats[stat], title=names[stat], labels=short, zmin=0.0, zmax=1.0, lang=context.lang)
    pick = views.model_view_pick(charts.chart(fig, key="chart_stats", on_select="rerun", selection_mode="points"))
    if pick is not None:
        charts.open_in_explorer(context, *pick)
    st.caption(t("stats.click"))


def _pair_inputs(context: Ctx) -> tuple[str, str, str, str]:
    session = st.session_state
    pair = i18n.examples(context.lang)["minimal_pair"]
    foreign = i18n.examples("zh" if context.lang == "en" else "en")["minimal_pair"]
    foreign_values = {foreign["a"], foreign["b"], foreign["query"], ", ".join(foreign["keys"])}
    defaults = {"mp_a": pair["a"], "mp_b": pair["b"], "mp_query": pair["query"], "mp_keys": ", ".join(pair["keys"])}
    for key, value in defaults.items():
        if key not in session or session[key] in foreign_values:
            session[key] = value
    a, b = st.columns(2)
    text_a, text_b = a.text_input(t("pair.a"), key="mp_a"), b.text_input(t("pair.b"), key="mp_b")
    a, b = st.columns(2)
    query = a.text_input(t("pair.query"), key="mp_query")
    keys = b.text_input(t("pair.keys"), key="mp_keys", help=t("pair.keys_help"))
    return text_a, text_b, query, keys


def minimal_pair(context: Ctx, s: Subject) -> None:
    st.subheader(t("pair.title"))
    st.caption(t("pair.intro"))
    text_a, text_b, query_word, key_words = _pair_inputs(context)
    got_a = subject.analysis(context, text_a, s.loaded, notices=False)
    got_b = subject.analysis(context, text_b, s.loaded, notices=False)
    if got_a is None or got_b is None:
        return
    # the words are found in, and the table names, the tokens the page lists: whole characters
    # (maps merged as the explorer's: columns summed over a character's pieces, rows averaged)
    ta, att_a, att_b = got_a.text, got_a.shown, got_b.shown
    if got_a.text != got_b.text and np.array_equal(got_a.att.weights, got_b.att.weights):  # both read as [UNK]
        st.info(t("pair.same_reading"), icon=":material/info:")
        unknown_notice(context, s.loaded.runner, got_b.text)  # names the model that reads them
        return
    q_idx = find_token(att_a.tokens, query_word)
    k_idx = [find_token(att_a.tokens, w) for w in parse_words(key_words)]
    if q_idx is None or not k_idx or any(k is None for k in k_idx):
        widgets.show_error(t("pair.not_found"))
        widgets.show_tokens(att_a.tokens, key="pair_tokens")
        return
    keys = [int(k) for k in k_idx if k is not None]
    result = widgets.attempt(
        lambda: explain.minimal_pair(att_a, att_b, q_idx, keys), "minimal pair", message=t("pair.failed")
    )
    if result is None:
        return
    with st.container(key="pair_result"):
        fig = views.layer_head_grid(result.score, title=t("pair.grid_title"), lang=context.lang)
        pick = views.model_view_pick(charts.chart(fig, key="chart_pair", on_select="rerun", selection_mode="points"))
        if pick is not None:
            charts.open_in_explorer(context, *pick, sentence=ta)
        rows = []
        for lay, hd in result.ranked[:5]:
            row: dict[str, Any] = {t("pair.col_head"): views.head_label(lay, hd, lang=lang())}
            for k in result.keys:
                row[f"A → {att_a.tokens[k]}"] = round(float(att_a.weights[lay, hd, result.query, k]), 3)
                row[f"B → {att_b.tokens[k]}"] = round(float(att_b.weights[lay, hd, result.query, k]), 3)
            rows.append(row)
        st.dataframe(rows, hide_index=True, key="table_pair")
        st.caption(t("pair.note"))
