"""Heads switched off (Michel et al. 2019): in the explorer, the focused or clicked heads off in
the views and how far the output moved; on the Explain page, every head off alone beside Michel
et al.'s gradient estimate, and the pruning curve."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from operator import attrgetter
from typing import Any

import numpy as np
import streamlit as st

from ... import explain, views
from ...explain.ablation import IMPORTANCE_MAX_TOKENS, HeadImportance, PruningCurve
from ...explain.removal_lm import is_lm
from ...models import HeadMode, Progress, Runner, gate
from ...models.switching import projection_parts
from ...models.tokens import token_limit
from ...result import Attention
from .. import again, charts, heads_off, nav, runners, widgets, work
from ..again import Again
from ..runners import Loaded
from ..server import visitor
from ..state import Ctx, keep, t
from ..subject import Focus, Subject, has_byte_pieces
from .explain import code_span

Heads = tuple[tuple[int, int], ...]
AUTO_IMPORTANCE_N = 64  # beyond this many tokens head importance starts on request
MODE_WIDGET, CLICK_WIDGET = "_abl_mode", "_abl_click"  # their values live in heads_off.MODE/CLICK (state.KEPT)


def _supported(runner: Runner) -> bool:
    if getattr(runner, "post_ln_encoder", False):  # known without loading transformers (models/minilm_quick.py)
        return True
    try:
        projection_parts(runner)  # a post-LN encoder's layers or a Llama-family decoder's
    except ValueError:
        return False
    return True


def has_layers(runner: Any) -> bool:
    """Whether the model's layers can be taken apart (heads switched off, value norms)."""
    try:
        runner.layers()
    except (ValueError, AttributeError, NotImplementedError):
        return False
    return True


def _mode(runner: Runner) -> HeadMode:
    """The visitor's mode; a decoder's is "zero" (a mean over positions would reach later tokens)."""
    return "zero" if is_lm(runner) else heads_off.mode()


def cached_ablation(context: Ctx, loaded: Loaded, text: str, off: Heads, mode: HeadMode) -> explain.Ablation | None:
    """The model with `off` switched off, through the result cache (progress, Cancel, budget):
    one entry for the explorer, the lesson and the head card. Raises what `explain.ablate` raises."""
    runner = loaded.runner

    def compute(progress: Progress) -> explain.Ablation:
        return explain.ablate(runner, text, off, mode, max_tokens=context.max_tokens, progress=progress)

    label = t("abl.computing", k=len(off))
    return work.cached_long(context, loaded, "ablate", text, off, mode, label=label, fn=compute)


def _ablation(context: Ctx, loaded: Loaded, text: str, off: Heads, mode: HeadMode) -> explain.Ablation | None:
    return widgets.attempt(lambda: cached_ablation(context, loaded, text, off, mode), "switching heads")


def _off_list(off: Heads, lang: str) -> str:
    heads = "; ".join(views.head_label(layer, head, lang=lang) for layer, head in off)
    return t("abl.off_list", k=len(off), heads=heads) if off else t("abl.none_off")


def _controls(context: Ctx, focus: Focus, off: Heads) -> None:
    a, b, col, d = st.columns([3, 3, 3, 2])
    if focus.head is None:
        a.caption(t("abl.pick_head"))
    else:
        key = "abl.switch_on" if (focus.layer, focus.head) in off else "abl.switch_off"
        a.button(t(key, layer=focus.layer, head=focus.head), key="abl_toggle", on_click=heads_off.toggle,
                 args=(focus.att.model, focus.layer, focus.head))  # fmt: skip
    b.checkbox(t("abl.click_mode"), key=CLICK_WIDGET, on_change=keep, args=(CLICK_WIDGET,),
               help=t("abl.click_mode_help"))  # fmt: skip
    if is_lm(focus.loaded.runner):
        col.caption(t("abl.mode_decoder"))
    else:
        col.radio(t("abl.mode"), heads_off.MODES, key=MODE_WIDGET, format_func=widgets.option_labels("abl.mode_{}"),
                  on_change=keep, args=(MODE_WIDGET,), horizontal=True, help=t("abl.mode_help"))  # fmt: skip
    d.button(t("abl.all_on"), key="abl_all_on", on_click=heads_off.clear, disabled=not off)
    with st.container(key="abl_off_list"):
        st.caption(_off_list(off, context.lang))


def _derived(context: Ctx, focus: Focus, result: explain.Ablation) -> tuple[Attention, Again]:
    """The switched attention as the views draw it: specials hidden and words merged as asked;
    and how a download gets it again (app/again.py)."""
    hide, merge = bool(focus.settings.get("hide_special")), bool(focus.settings.get("merge_words"))
    loaded, text, off, mode = focus.loaded, focus.text, result.heads, result.mode
    rerun = partial(_ablate, context, again.model_of(context, loaded), text, off, mode)
    steps = ((runners.result_key(context, loaded, "ablate", text, off, mode), rerun), (None, attrgetter("attention")))
    back = Again(context.settings, visitor.visitor(), steps).holding(result.attention)
    if not (hide or merge or has_byte_pieces(result.attention)):
        return result.attention, back
    key = runners.result_key(context, loaded, "ablate_view", text, off, mode, hide, merge)
    # byte pieces as whole characters, as the explorer shows them
    return again.step(
        context, back, key, lambda att: runners.viewed(hide, merge, att).merge_characters(), result.attention
    )


def _ablate(
    context: Ctx, model: Callable[[], Loaded], text: str, off: Heads, mode: HeadMode, _before: None
) -> explain.Ablation:
    """The switched model again (a download's click after the cache let it go): heavy work, as
    in the page (`_ablation`)."""
    runner = model().runner
    with gate.heavy(size_mb=work.attention_mb(runner.n_layers, runner.n_heads, text, context.max_tokens)):
        return explain.ablate(runner, text, off, mode, max_tokens=context.max_tokens)


def switch(context: Ctx, focus: Focus) -> Focus:
    """The explorer's switch: controls, then (with heads off) the effect numbers and the Focus
    of the switched model, whose maps the views draw; `f.base` keeps the whole model's."""
    runner = focus.loaded.runner
    with st.container(key="ablation"):
        st.subheader(t("abl.title"))
        st.caption(t("abl.intro"))
        if not _supported(runner):
            st.caption(t("abl.unsupported"))
            return focus
        off = heads_off.current(focus.att.model, runner.n_layers, runner.n_heads)
        _controls(context, focus, off)
        if not off:
            return focus
        mode = _mode(runner)
        result = _ablation(context, focus.loaded, focus.text, off, mode)
        if result is None:
            return focus
        with st.container(key="abl_numbers"):
            st.info(t("abl.showing", k=len(result.heads)), icon=":material/content_cut:")
            a, b, col = st.columns(3)
            name = "abl.next_token_drop" if result.measure == "next_token" else "abl.sentence_distance"
            a.metric(t(name), f"{result.effect:.4f}", help=t(f"{name}_help", token=code_span(result.next_token)))
            b.metric(t("abl.token_distance"), f"{result.token_distance.mean():.4f}", help=t("abl.token_distance_help"))
            i = int(np.argmax(result.token_distance))
            col.metric(t("abl.token_max"), f"{result.token_distance[i]:.4f}")
            col.caption(widgets.escape_md(f"{i}: {result.attention.tokens[i]}"))
    settings = {**focus.settings, "heads_off": [list(h) for h in off], "ablation_mode": mode}
    att, back = _derived(context, focus, result)
    return replace(focus, att=att, base=focus.att, off=off, settings=settings, again=back)


def effect(context: Ctx, focus: Focus) -> None:
    """Below the views, with heads off: how far each token moved, and how much each head's map
    changed (clickable: focus that head)."""
    if not focus.off or focus.base is None:
        return
    result = _ablation(context, focus.loaded, focus.text, focus.off, _mode(focus.loaded.runner))
    if result is None:
        return
    with st.container(key="abl_effect"):
        st.subheader(t("abl.effect_title"))
        st.caption(t("abl.effect_note"))
        left, right = st.columns(2, gap="large")
        with left:
            fig = views.ablation_effect(
                result.attention.tokens, result.token_distance, result.effect,
                measure=result.measure, next_token=result.next_token, lang=context.lang,
            )  # fmt: skip
            charts.chart(fig, key="chart_abl_tokens")
        with right:
            change = views.attention_change(focus.base, focus.att, off=focus.off, lang=context.lang)
            on_select = partial(charts.focus_from_chart, "chart_abl_change")
            charts.chart(change, key="chart_abl_change", on_select=on_select, selection_mode="points")


# --- the Explain page: head importance and the pruning curve ----------------------------------


def _importance(
    context: Ctx, s: Subject, limit: int, mode: HeadMode
) -> tuple[HeadImportance, dict[str, PruningCurve]] | None:
    runner = s.loaded.runner

    def both(progress: Progress) -> tuple[HeadImportance, dict[str, PruningCurve]]:
        imp = explain.head_importance(runner, s.fitted, mode, max_tokens=limit, progress=lambda x: progress(0.75 * x))
        curves = explain.pruning_curves(
            runner, s.fitted, imp, max_tokens=limit, progress=lambda x: progress(0.75 + 0.25 * x)
        )
        return imp, curves

    label = t("abl.computing_importance", heads=runner.n_layers * runner.n_heads, n=min(s.att.n, limit))
    return widgets.attempt(
        lambda: work.cached_long(context, s.loaded, "head_importance", s.fitted, mode, limit, label=label, fn=both),
        "head importance",
    )


def importance(context: Ctx, s: Subject) -> None:
    """Head importance as a clickable grid (click: switch that head off), the rank agreement of
    the real effect and Michel et al.'s estimate, and the pruning curve."""
    runner = s.loaded.runner
    lm = "_lm" if is_lm(runner) else ""  # a decoder's words: the next token, not a sentence embedding
    with st.container(key="abl_importance"):
        st.subheader(t("abl.importance_title"))
        st.caption(t("abl.importance_intro" + lm))
        if not _supported(runner):
            st.caption(t("abl.unsupported"))
            return
        limit = token_limit(context.settings.explain_tokens, IMPORTANCE_MAX_TOKENS)
        session, n = st.session_state, min(s.att.n, limit)
        if s.att.n > limit:
            st.info(t("abl.capped", n=s.att.n, limit=limit), icon=":material/content_cut:")
        signature = (s.att.text, s.att.model, n)
        if n > AUTO_IMPORTANCE_N and session.get("_abl_importance") != signature:  # past it: on request
            st.caption(t("abl.on_request", n=n))
            if not st.button(t("abl.compute", n=n), key="abl_compute"):
                return
            session["_abl_importance"] = signature
        result = _importance(context, s, limit, _mode(runner))
        if result is None:
            return
        imp, curves = result
        _importance_grid(context, s, imp)
        charts.chart(views.pruning_curve(curves, lang=context.lang), key="chart_abl_curve")
        st.caption(t("abl.curve_caption" + lm))
        _switch_k(s, imp)


def _ranking_choice(label: str, key: str) -> str:
    """Which ranking of the heads: the measured effect of switching each off, or the gradient estimate."""
    options = widgets.option_labels("abl.which_{}")
    return str(st.radio(t(label), ("effect", "gradient"), key=key, format_func=options, horizontal=True))


def _switch_k(s: Subject, imp: HeadImportance) -> None:
    """Switch off the k least important heads by one ranking: the curve's point, in the explorer."""
    total = imp.effect.size
    a, b, col = st.columns([3, 3, 2], vertical_alignment="bottom")
    k = a.slider(t("abl.k"), min_value=0, max_value=total, value=total // 2, key="x_abl_k")
    with b:
        order = _ranking_choice("abl.k_order", "x_abl_k_order")
    heads = imp.ranking(order)[: int(k)]  # type: ignore[arg-type]
    col.button(t("abl.apply_k"), key="abl_apply_k", on_click=heads_off.replace_with, args=(s.att.model, heads),
               help=t("abl.apply_k_help"))  # fmt: skip


def _importance_grid(context: Ctx, s: Subject, imp: HeadImportance) -> None:
    runner = s.loaded.runner
    which = _ranking_choice("abl.which", "x_importance")
    off = heads_off.current(s.att.model, runner.n_layers, runner.n_heads)
    values = imp.effect if which == "effect" else imp.gradient
    fig = views.importance_grid(values, which, off=off, measure=imp.measure, lang=context.lang)  # type: ignore[arg-type]
    on_select = partial(heads_off.toggle_from_chart, "chart_abl_importance", s.att.model)
    charts.chart(fig, key="chart_abl_importance", on_select=on_select, selection_mode="points")
    a, b = st.columns(2)
    a.metric(t("abl.kendall"), f"{imp.kendall:.2f}", help=t("abl.agreement_help"))
    b.metric(t("abl.spearman"), f"{imp.spearman:.2f}", help=t("abl.agreement_help"))
    lm = "_lm" if imp.measure == "next_token" else ""
    st.caption(t("abl.loss_note" + lm, token=code_span(imp.next_token)))
    with st.container(key="abl_importance_off"):
        st.caption(_off_list(off, context.lang))
        if off:
            st.button(t("abl.all_on"), key="abl_importance_all_on", on_click=heads_off.clear)
            st.page_link(nav.page("explorer", context.lang), label=t("abl.see_explorer"), icon=":material/grid_on:")
