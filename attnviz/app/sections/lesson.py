"""The guided lesson page: the sentence read by the language's model (e5-small for Chinese,
MiniLM for English), the facts of its steps (attnviz/lesson), and the printable handout. Every
answer widget's key ends with the sentence's signature (`Lesson.key`), so a new sentence, model or
language shows fresh questions and the handout records only its own sentence's answers. Everything
heavy goes through the app's caches, so a changed answer reruns no model."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import streamlit as st

from ... import lesson
from ...lesson import Facts
from ...lesson.handout import Answer, handout_html
from ...models.unknown_tokens import model_for_language
from ...result import Attention
from .. import subject, widgets
from ..readers import model_label
from ..runners import Loaded
from ..state import Ctx, t
from ..widgets import escape_md
from . import classroom
from .ablation import cached_ablation, has_layers
from .explain import cached_norms

QUESTIONS = (*lesson.STEPS, "referent")  # "referent": step 4's first question


@dataclasses.dataclass(frozen=True)
class Lesson:
    """The visitor's sentence as the lesson reads it. `look` holds the facts of steps 1-3 (a head
    chosen without any referent); `facts` those of steps 4-6, the heads linking the query to what
    it refers to, None until the referent is known."""

    loaded: Loaded
    text: str
    att: Attention
    look: Facts
    pronoun_found: bool
    known: int | None  # the referent the lesson knows (its own example sentence), else None
    signature: str
    facts: Facts | None = None

    def key(self, step: str) -> str:
        """The answer widget of `step` for this sentence."""
        return f"lesson_a_{step}_{self.signature}"


def fields(facts: Facts, lang: str) -> dict[str, str]:
    """The steps' text fields, escaped for Markdown (tokens are visitor text)."""
    return {name: escape_md(value, limit=60) for name, value in lesson.step_fields(facts, lang).items()}


def prepare(context: Ctx, text: str, model: str | None = None) -> Lesson | None:
    """Load the lesson's model (`model`, a class's; else the language's), analyse the sentence, find
    the pronoun and the head steps 2-3 show; None (after a readable message) if it cannot be analysed."""
    model = model or model_for_language(context.lang, list(context.settings.model_choices))
    got = subject.analysis(context, text, model, tokens=False)  # step 1 lists the tokens
    if got is None:
        return None
    loaded, clean, att = got.loaded, got.text, got.att
    st.caption(t("lesson.model_note", model=escape_md(model_label(loaded.runner.name))))
    query, found = lesson.lesson_query(att, context.lang)
    look = Facts.of(att, lesson.look_head(att, query))
    raw = repr((clean, att.model, context.lang, context.max_tokens)).encode("utf-8")
    signature = hashlib.blake2b(raw, digest_size=6).hexdigest()
    known = lesson.known_referent(att, context.lang, clean)
    return Lesson(loaded, clean, att, look, found, known, signature)


def with_referent(run: Lesson, referent: int | None) -> Lesson:
    """The lesson with steps 4-6's facts: the heads linking the query to `referent`."""
    if referent is None:
        return run
    pick = lesson.find_head(run.att, run.look.pick.query, referent)
    return dataclasses.replace(run, facts=Facts.of(run.att, pick))


def with_switch(context: Ctx, run: Lesson, facts: Facts) -> Facts:
    """`facts` with the picked head switched off (cached under the explorer's key)."""
    if not has_layers(run.loaded.runner):
        return facts
    p = facts.pick
    result = widgets.attempt(
        lambda: cached_ablation(context, run.loaded, run.text, ((p.layer, p.head),), "zero"),
        "switching a head off in the lesson",
    )
    if result is None or result.token_distance.shape != (run.att.n,):
        return facts
    return dataclasses.replace(
        facts, distances=np.asarray(result.token_distance), sentence_distance=float(result.sentence_distance)
    )


def with_norms(context: Ctx, run: Lesson, facts: Facts) -> Facts:
    """`facts` with the picked head's norm-based row (cached under the sinks' key)."""
    if not has_layers(run.loaded.runner):
        return facts
    runner, p = run.loaded.runner, facts.pick
    fitted = runner.fit(run.text, context.max_tokens)
    norms = widgets.attempt(lambda: cached_norms(context, run.loaded, fitted), "norm-based weights in the lesson")
    if norms is None or norms.per_head.shape[-1] != run.att.n:
        return facts
    row = np.asarray(norms.per_head[p.layer, p.head, p.query], dtype=np.float64)
    total = float(row.sum())
    return dataclasses.replace(facts, norm_row=row / total) if total > 0 else facts


def answers(run: Lesson, lang: str) -> dict[str, Answer]:
    """The visitor's answers to this sentence so far, as they saw them, with their checks."""
    session, out = st.session_state, {}
    for step in QUESTIONS:
        # steps 1-3 and the referent read the head chosen without a referent, steps 4-6 the linked heads
        facts = run.look if step in ("tokens", "one_head", "all_heads", "referent") else run.facts
        value = session.get(run.key(step))
        if value is None or facts is None:
            continue
        if step == "referent":
            verdict = lesson.check_referent(value, facts.tokens, facts.pick.query, run.known)
        else:
            verdict = lesson.check(step, value, facts, lang)
        out[step] = Answer(lesson.answer_label(step, value, facts, lang), verdict)
    return out


def handout(context: Ctx, run: Lesson) -> None:
    """The printable handout of this lesson, with the visitor's figures and answers."""
    with st.container(key="lesson_handout_box"):
        st.divider()
        look, facts, lang, text = run.look, run.facts, context.lang, run.text
        model, given = model_label(run.loaded.runner.name), answers(run, lang)
        page = lambda: handout_html(look, lang=lang, text=text, model=model, answers=given, linked=facts)  # noqa: E731
        classroom.keep_handout(context, page)
        st.download_button(t("lesson.download"), data=page, file_name="attnviz-lesson.html", mime="text/html",
                           key="lesson_handout", on_click="ignore", icon=":material/download:",
                           help=t("lesson.download_help"))  # fmt: skip
        st.caption(t("lesson.further"))
