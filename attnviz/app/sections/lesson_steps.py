"""The lesson's six steps, each in a container "lesson_step_<step>": the title, what to look for,
a picture of the visitor's sentence, and one question ("lesson_q_<step>") checked at once
(attnviz/lesson.py `check`) in "lesson_verdict_<step>": a hint after a first wrong try, the
answer after a second. Step 4 first asks for the referent ("lesson_q_referent")."""

from __future__ import annotations

import contextlib
import dataclasses
import html
from collections.abc import Callable, Iterator

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from ... import lesson, views
from ...lesson import LIMIT_OPTIONS, SAME_OPTIONS, STEPS, Facts, Verdict
from ...result import Attention
from .. import charts, literal, widgets
from ..state import Ctx, t
from ..widgets import escape_md
from . import classroom
from .lesson import Lesson, fields, with_norms, with_referent, with_switch

THUMB = 32  # as the explorer's all-heads grid
Widget = Callable[[str, str], object]  # (label, key) -> the answer, None until one is given
TRIES = "_lesson_tries"  # {"sig": signature, step: [wrong answers given, distinct, in order]}


def _look(step: str, f: dict[str, str], key: str | None = None) -> None:
    st.markdown(f"**{t('lesson.look_label')}** · {t(key or f'lesson.{step}.look', **f)}")


@contextlib.contextmanager
def _box(step: str, context: Ctx, run: Lesson) -> Iterator[bool]:
    """The step's container with its title; yields whether the step is shown (in a class, one
    the teacher has not opened gets a line that says so instead)."""
    with st.container(key=f"lesson_step_{step}", border=True):
        name = t(f"lesson.{step}.title", **fields(run.look, context.lang))
        st.subheader(t("lesson.step_title", i=STEPS.index(step) + 1, total=len(STEPS), title=name))
        closed = classroom.closed(step)
        if closed:
            st.info(t("class.step_closed"), icon=":material/lock:")
        yield not closed


def _verdict(context: Ctx, run: Lesson, step: str, value: object, verdict: Verdict, facts: Facts) -> bool:
    """Show the check of an answer: right; or wrong with a hint the first time and the why (which
    names the right answer) from the second distinct wrong answer on. Whether the why was shown."""
    book = st.session_state.get(TRIES)
    if not isinstance(book, dict) or book.get("sig") != run.signature:  # a new sentence forgets them
        book = st.session_state[TRIES] = {"sig": run.signature}
    wrong = book.setdefault(step, [])
    if not verdict.right and value not in wrong:
        wrong.append(value)
    told = verdict.right or len(wrong) >= 2
    shown = verdict if told else lesson.hint(step, facts)
    why = shown.why(context.lang, lambda s: escape_md(s, limit=60))
    with st.container(key=f"lesson_verdict_{step}"):
        if verdict.key == "lesson.why.referent_taken":
            st.info(why, icon=":material/info:")
        elif verdict.right:
            st.success(f"**{t('lesson.right')}** {why}", icon=":material/check_circle:")
        else:
            st.warning(f"**{t('lesson.wrong')}** {why}", icon=":material/cancel:")
        label = lesson.answer_label(step, value, facts, context.lang)
        classroom.record(context, run.signature, run.text, step, label, verdict.right, shown)
    return told


def _ask(context: Ctx, run: Lesson, step: str, facts: Facts, widget: Widget) -> None:
    """The step's question; once answered, its check."""
    label = t(f"lesson.{step}.question", **fields(facts, context.lang))
    with st.container(key=f"lesson_q_{step}"):
        value = widget(label, run.key(step))
    if value is not None:
        _verdict(context, run, step, value, lesson.check(step, value, facts, context.lang), facts)


def _pick(options: list[int], fmt: Callable[[int], str]) -> Widget:
    return lambda label, key: st.selectbox(
        label, options, index=None, key=key, format_func=fmt, placeholder=t("lesson.answer_placeholder")
    )


def _pick_token(tokens: tuple[str, ...], choices: list[int] | None = None) -> Widget:
    return _pick(list(range(len(tokens))) if choices is None else choices, widgets.token_format(list(tokens)))


def _pick_option(options: tuple[str, ...]) -> Widget:
    fmt = widgets.option_labels("lesson.opt.{}")
    return lambda label, key: st.radio(label, options, index=None, key=key, format_func=fmt)


def _count(label: str, key: str) -> object:
    return st.number_input(label, min_value=0, max_value=100_000, value=None, step=1, key=key)


def _step(step: str, context: Ctx, run: Lesson, facts: Facts, picture: Callable[[], object], widget: Widget) -> None:
    with _box(step, context, run) as shown:
        if not shown:
            return
        f = fields(facts, context.lang)
        if step == "tokens":  # the first screen: the text beside its picture
            left, right = st.columns([3, 2])
            with left:
                _look(step, f)
            with right:
                picture()
            with st.container(key="tokens"):  # literal text (app/literal.py) without their count: step 1 asks it
                literal.literal(widgets.TOKEN_SEPARATOR.join(run.att.tokens))
        else:
            _look(step, f)
            picture()
        _ask(context, run, step, facts, widget)


def _referent(context: Ctx, run: Lesson) -> Lesson:
    """Step 4's first question: what the pronoun refers to, the student's reading (checked where
    the lesson knows the answer, its own example); the lesson with the heads linking the two."""
    look, lang = run.look, context.lang
    q = look.pick.query
    ask = "lesson.referent.question" if run.pronoun_found else "lesson.referent.question_free"
    with st.container(key="lesson_q_referent"):
        value = _pick_token(look.tokens, lesson.referent_choices(run.att, q))(
            t(ask, **fields(look, lang)), run.key("referent")
        )
    if value is None:
        st.caption(t("lesson.referent.first", **fields(look, lang)))
        return run
    verdict = lesson.check_referent(value, look.tokens, q, run.known)
    told = _verdict(context, run, "referent", value, verdict, look)
    if run.known is None:
        return with_referent(run, value if isinstance(value, int) else None)
    return with_referent(run, run.known) if told else run


def _pronoun(context: Ctx, run: Lesson) -> Lesson:
    """Step 4: the referent, then which heads link the query to it."""
    lang = context.lang
    with _box("pronoun", context, run) as shown:
        if not shown:
            return run
        run = _referent(context, run)
        if run.facts is None:
            return run
        facts = run.facts
        p = facts.pick
        _look("pronoun", fields(facts, lang), "lesson.pronoun.look" if p.above_uniform else "lesson.pronoun.look_below")
        charts.chart(views.token_focus(run.att, p.query, p.key, top=12, lang=lang), key="lesson_chart_pronoun")
        L, H = facts.column.shape
        names = [lesson.head_name(layer, head, lang) for layer in range(L) for head in range(H)]
        _ask(context, run, "pronoun", facts, _pick(list(range(L * H)), names.__getitem__))
    return run


def steps(context: Ctx, run: Lesson) -> Lesson:
    """Draw the six steps in order; returns the lesson with what steps 4-6 computed."""
    att, look, lang = run.att, run.look, context.lang
    p = look.pick
    _step("tokens", context, run, look, lambda: _tokens_picture(context, att), _count)
    heat = views.heatmap(att, p.layer, p.head, zmax=1.0, lang=lang)
    _step("one_head", context, run, look, lambda: _one_head_picture(context, run, heat), _pick_token(look.tokens))
    grid = views.model_view(att, focus=(p.layer, p.head), thumb=THUMB, lang=lang)
    _step("all_heads", context, run, look, lambda: charts.chart(grid, key="lesson_chart_all_heads"),
          _pick_option(SAME_OPTIONS))  # fmt: skip
    run = _pronoun(context, run)
    if run.facts is None:  # steps 5-6 follow the referent's heads: before the referent is said, they wait
        for step in ("switch_off", "limits"):
            with _box(step, context, run) as shown:
                if shown:
                    st.info(t("lesson.after_referent", **fields(look, lang)), icon=":material/arrow_upward:")
        return run
    switched = with_switch(context, run, run.facts)
    _step("switch_off", context, run, switched, lambda: _switch_picture(context, switched), _pick_token(look.tokens))
    normed = with_norms(context, run, switched)
    _step("limits", context, run, normed, lambda: _limits_picture(context, normed), _pick_option(LIMIT_OPTIONS))
    return dataclasses.replace(run, facts=normed)


def _one_head_picture(context: Ctx, run: Lesson, heat: go.Figure) -> None:
    """Which token the lesson follows and the head the app picked, then its map."""
    with st.container(key="lesson_pair"):
        if not run.pronoun_found:
            st.info(t("lesson.no_pronoun", q=escape_md(run.look.query_token, limit=60)), icon=":material/info:")
        st.markdown(t("lesson.look_pick", **fields(run.look, context.lang)))
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


def _switch_picture(context: Ctx, f: Facts) -> None:
    if f.distances is None:
        st.caption(t("lesson.switch_unsupported"))
        return
    fig = views.ablation_effect(f.att.tokens, f.distances, f.sentence_distance or 0.0, lang=context.lang)
    charts.chart(fig, key="lesson_chart_switch_off")


def _limits_picture(context: Ctx, f: Facts) -> None:
    series = {t("lesson.handout.weight"): f.row}
    if f.norm_row is not None:
        series[t("lesson.handout.norm")] = f.norm_row
    plain = {name: html.escape(value, quote=False) for name, value in lesson.step_fields(f, context.lang).items()}
    title = t("lesson.fig.limits", **plain)
    fig = views.token_bars(f.att.tokens, series, title=title, highlight=f.pick.key, lang=context.lang)
    charts.chart(fig, key="lesson_chart_limits")
