"""The lesson's six steps, each in its own container (key "lesson_step_<step>"): the step's title,
what to look for, a picture of the visitor's sentence from the existing views, and one question
whose answer is checked at once (attnviz/lesson.py `check`), right or wrong with a short why in
a container "lesson_verdict_<step>". Expert switches stay on the other pages."""

from __future__ import annotations

import html
from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from ... import lesson, views
from ...lesson import LIMIT_OPTIONS, SAME_OPTIONS, STEPS, Facts
from ...result import Attention
from .. import charts, literal, widgets
from ..state import Ctx, t
from ..widgets import escape_md
from .lesson import ANSWER_KEYS, Lesson, fields, pair_note, with_norms, with_switch

__all__ = ["steps"]

THUMB = 32  # as the explorer's all-heads grid
Widget = Callable[[str, str], object]  # (label, key) -> the answer, None until one is given


def _heading(i: int, step: str, f: dict[str, str]) -> None:
    st.subheader(t("lesson.step_title", i=i, total=len(STEPS), title=t(f"lesson.{step}.title", **f)))


def _look(step: str, f: dict[str, str]) -> None:
    st.markdown(f"**{t('lesson.look_label')}** · {t(f'lesson.{step}.look', **f)}")


def _ask(context: Ctx, step: str, facts: Facts, widget: Widget) -> None:
    """The step's question; once answered, the check with its why."""
    label = t(f"lesson.{step}.question", **fields(facts, context.lang))
    value = widget(label, ANSWER_KEYS[step])
    if value is None:
        return
    verdict = lesson.check(step, value, facts, context.lang)
    why = verdict.why(context.lang, lambda s: escape_md(s, limit=60))
    with st.container(key=f"lesson_verdict_{step}"):
        if verdict.right:
            st.success(f"**{t('lesson.right')}** {why}", icon=":material/check_circle:")
        else:
            st.warning(f"**{t('lesson.wrong')}** {why}", icon=":material/cancel:")


def _pick_token(facts: Facts) -> Widget:
    fmt = widgets.token_format(list(facts.tokens))
    return lambda label, key: st.selectbox(
        label, list(range(facts.n)), index=None, key=key, format_func=fmt, placeholder=t("lesson.answer_placeholder")
    )


def _pick_option(options: tuple[str, ...]) -> Widget:
    fmt = widgets.option_labels("lesson.opt.{}")
    return lambda label, key: st.radio(label, options, index=None, key=key, format_func=fmt)


def _pick_head(facts: Facts, lang: str) -> Widget:
    L, H = facts.column.shape
    names = [lesson.head_name(layer, head, lang) for layer in range(L) for head in range(H)]
    return lambda label, key: st.selectbox(
        label,
        list(range(L * H)),
        index=None,
        key=key,
        format_func=names.__getitem__,
        placeholder=t("lesson.answer_placeholder"),
    )


def _count(label: str, key: str) -> object:
    return st.number_input(label, min_value=0, max_value=100_000, value=None, step=1, key=key)


def _step(i: int, step: str, context: Ctx, run: Lesson, picture: Callable[[], object], widget: Widget) -> None:
    with st.container(key=f"lesson_step_{step}", border=True):
        f = fields(run.facts, context.lang)
        _heading(i, step, f)
        if step == "tokens":  # the first screen: the text beside its picture
            left, right = st.columns([3, 2])
            with left:
                _look(step, f)
            with right:
                picture()
        else:
            _look(step, f)
            picture()
        if step == "tokens":
            _tokens(run.att.tokens)
        _ask(context, step, run.facts, widget)


def steps(context: Ctx, run: Lesson) -> Lesson:
    """Draw the six steps in order; returns the lesson with what steps 5 and 6 computed."""
    att, facts, lang = run.att, run.facts, context.lang
    p = facts.pick
    _step(1, "tokens", context, run, lambda: _tokens_picture(context, att), _count)
    heat = views.heatmap(att, p.layer, p.head, zmax=1.0, lang=lang)
    _step(2, "one_head", context, run, lambda: _one_head_picture(context, run, heat), _pick_token(facts))
    grid = views.model_view(att, focus=(p.layer, p.head), thumb=THUMB, lang=lang)
    _step(3, "all_heads", context, run, lambda: charts.chart(grid, key="lesson_chart_all_heads"),
          _pick_option(SAME_OPTIONS))  # fmt: skip
    ranked = views.token_focus(att, p.query, p.key, top=12, lang=lang)
    _step(4, "pronoun", context, run, lambda: charts.chart(ranked, key="lesson_chart_pronoun"), _pick_head(facts, lang))
    run = with_switch(context, run)
    _step(5, "switch_off", context, run, lambda: _switch_picture(context, run), _pick_token(run.facts))
    run = with_norms(context, run)
    _step(6, "limits", context, run, lambda: _limits_picture(context, run), _pick_option(LIMIT_OPTIONS))
    return run


def _one_head_picture(context: Ctx, run: Lesson, heat: go.Figure) -> None:
    pair_note(context, run)
    charts.chart(heat, key="lesson_chart_one_head")


def _tokens_picture(context: Ctx, att: Attention) -> None:
    """How many characters of the text each token holds (for step 1, beside what to look for)."""
    if len(att.spans) != att.n:
        return
    chars = np.array([max(end - start, 0) for start, end in att.spans], dtype=np.float64)
    fig = views.token_bars(
        att.tokens, {t("lesson.fig.chars_name"): chars}, title=t("lesson.fig.chars"), lang=context.lang
    )
    fig.update_layout(height=260, showlegend=False, margin={"t": 40})
    charts.chart(fig, key="lesson_chart_tokens")


def _tokens(tokens: list[str]) -> None:
    """The tokens as literal text (app/literal.py), without their count: step 1 asks it."""
    with st.container(key="tokens"):
        literal.literal(widgets.TOKEN_SEPARATOR.join(tokens))


def _switch_picture(context: Ctx, run: Lesson) -> None:
    f = run.facts
    if f.distances is None:
        st.caption(t("lesson.switch_unsupported"))
        return
    fig = views.ablation_effect(run.att.tokens, f.distances, f.sentence_distance or 0.0, lang=context.lang)
    charts.chart(fig, key="lesson_chart_switch_off")


def _limits_picture(context: Ctx, run: Lesson) -> None:
    f, lang = run.facts, context.lang
    series = {t("lesson.handout.weight"): f.row}
    if f.norm_row is not None:
        series[t("lesson.handout.norm")] = f.norm_row
    plain = {name: html.escape(value, quote=False) for name, value in lesson.step_fields(f, lang).items()}
    title = t("lesson.fig.limits", **plain)
    fig = views.token_bars(run.att.tokens, series, title=title, highlight=f.pick.key, lang=lang)
    charts.chart(fig, key="lesson_chart_limits")
