"""The guided lesson page: the sentence read by the language's model (e5-small for Chinese,
MiniLM for English), the pronoun and antecedent it follows and the head the app picks for it
(attnviz/lesson.py), six steps (app/sections/lesson_steps.py) and the printable handout.

Everything heavy goes through the app's caches: the attention (`runners.analyse`), the head
switched off (`work.cached_long`, the explorer's cache key) and the norm-based weights (the
sinks' key), so a second visit or an answer changed reruns no model."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import streamlit as st

from ... import explain, lesson
from ...lesson import Facts
from ...lesson_handout import Answer, handout_html
from ...models import HeadMode, Progress
from ...result import Attention
from ...unknown import model_for_language
from .. import runners, widgets, work
from ..readers import model_label, unknown_notice
from ..runners import Loaded
from ..state import CUSTOM, Ctx, model_options, t
from ..widgets import escape_md

__all__ = ["ANSWER_KEYS", "Lesson", "handout", "lesson_model", "pair_note", "prepare"]

ANSWER_KEYS = {step: f"lesson_a_{step}" for step in lesson.STEPS}  # one answer widget a step
SIGNATURE = "_lesson_signature"


@dataclass(frozen=True)
class Lesson:
    """The visitor's sentence as the lesson reads it."""

    loaded: Loaded
    text: str
    att: Attention
    facts: Facts
    pronoun_found: bool


def lesson_model(context: Ctx) -> str:
    """The model of the interface language (e5-small for Chinese), among the offered ones."""
    return model_for_language(context.lang, [m for m in model_options(context.settings) if m != CUSTOM])


def fields(facts: Facts, lang: str) -> dict[str, str]:
    """The steps' text fields, escaped for Markdown (tokens are visitor text)."""
    return {name: escape_md(value, limit=60) for name, value in lesson.step_fields(facts, lang).items()}


def prepare(context: Ctx, text: str) -> Lesson | None:
    """Load the lesson's model, analyse the sentence, find the pronoun, its antecedent and the
    head that links them. None (after a readable message) when the text cannot be analysed."""
    loaded = runners.load_runner(context, lesson_model(context))
    clean = runners.checked_text(context, text)
    if loaded is None or clean is None:
        return None
    att = runners.analyse(context, loaded, clean)
    if att is None:
        return None
    st.caption(t("lesson.model_note", model=escape_md(model_label(loaded.runner.name))))
    query, key, found = lesson.lesson_pair(att, context.lang, lesson.antecedent_word(context.lang))
    pick = lesson.find_head(att, query, key)
    facts = Facts.of(att, pick)
    _forget_answers((clean, att.model, context.lang, context.max_tokens))
    unknown_notice(context, loaded.runner, clean)
    return Lesson(loaded, clean, att, facts, found)


def pair_note(context: Ctx, run: Lesson) -> None:
    """Which pronoun and word the lesson follows, and the head the app found for them."""
    facts = run.facts
    with st.container(key="lesson_pair"):
        if not run.pronoun_found:
            st.info(t("lesson.no_pronoun", q=escape_md(facts.query_token, limit=60)), icon=":material/info:")
        key_text = "lesson.pair" if facts.pick.above_uniform else "lesson.pair_below"
        st.markdown(t(key_text, **fields(facts, context.lang)))


def _forget_answers(signature: tuple[object, ...]) -> None:
    """Answers belong to one sentence: a new sentence, model or language starts them afresh."""
    session = st.session_state
    if session.get(SIGNATURE) == signature:
        return
    session[SIGNATURE] = signature
    for key in ANSWER_KEYS.values():
        session.pop(key, None)


def supported(runner: object) -> bool:
    """Whether the model's layers can be taken apart (heads switched off, value norms)."""
    try:
        runner.layers()  # type: ignore[attr-defined]
    except ValueError:
        return False
    return True


def with_switch(context: Ctx, run: Lesson) -> Lesson:
    """The facts with the picked head switched off (cached under the explorer's key)."""
    p, runner = run.facts.pick, run.loaded.runner
    if not supported(runner):
        return run
    off = ((p.layer, p.head),)
    mode: HeadMode = "zero"

    def compute(progress: Progress) -> explain.Ablation:
        return explain.ablate(runner, run.text, off, mode, max_tokens=context.max_tokens, progress=progress)

    label = t("abl.computing", k=1)
    result = widgets.attempt(
        lambda: work.cached_long(context, run.loaded, "ablate", run.text, off, mode, label=label, fn=compute),
        "switching a head off in the lesson",
    )
    if result is None or result.token_distance.shape != (run.att.n,):
        return run
    facts = dataclasses.replace(
        run.facts, distances=np.asarray(result.token_distance), sentence_distance=float(result.sentence_distance)
    )
    return dataclasses.replace(run, facts=facts)


def with_norms(context: Ctx, run: Lesson) -> Lesson:
    """The facts with the picked head's norm-based row (cached under the sinks' key)."""
    runner, p = run.loaded.runner, run.facts.pick
    if not supported(runner):
        return run
    fitted = runner.fit(run.text, context.max_tokens)
    norms = widgets.attempt(
        lambda: runners.cached(context, run.loaded, "norms", fitted, fn=lambda: explain.norm_weights(runner, fitted)),
        "norm-based weights in the lesson",
    )
    if norms is None or norms.per_head.shape[-1] != run.att.n:
        return run
    row = np.asarray(norms.per_head[p.layer, p.head, p.query], dtype=np.float64)
    total = float(row.sum())
    if not total > 0:
        return run
    return dataclasses.replace(run, facts=dataclasses.replace(run.facts, norm_row=row / total))


def answers(run: Lesson, lang: str) -> dict[str, Answer]:
    """The visitor's answers so far, as they saw them, with their checks."""
    session, out = st.session_state, {}
    for step, key in ANSWER_KEYS.items():
        value = session.get(key)
        if value is not None:
            out[step] = Answer(
                lesson.answer_label(step, value, run.facts, lang), lesson.check(step, value, run.facts, lang)
            )
    return out


def handout(context: Ctx, run: Lesson) -> None:
    """The printable handout of this lesson, with the visitor's figures and answers."""
    with st.container(key="lesson_handout_box"):
        st.divider()
        facts, lang, text, model = run.facts, context.lang, run.text, model_label(run.loaded.runner.name)
        given = answers(run, lang)
        st.download_button(
            t("lesson.download"),
            data=lambda: handout_html(facts, lang=lang, text=text, model=model, answers=given),
            file_name="attnviz-lesson.html",
            mime="text/html",
            key="lesson_handout",
            on_click="ignore",
            icon=":material/download:",
            help=t("lesson.download_help"),
        )
        st.caption(t("lesson.further"))
