"""A student's side of a class, on the lesson page: joining (the join link's code, or one typed),
the class's banner, the teacher's sentence and model, steps not yet opened, and every checked
answer kept (attnviz/classes) before the page says "saved". The student's place is in their link
(`?class=CODE&student=TOKEN`; never in a share link: urls.CLASS_KEYS), so a reload goes on where
they were. The class is read again at each run, not on a timer: a fragment's timed rerun here made
Streamlit drop the next answer sent (streamlit/streamlit#10805, #14064), and a whole-page rerun
every few seconds for every student costs the server more than the class's answers do.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from ...classes import ClassInfo, Given, Refused, Student, read_code, student_label
from ...lesson import Verdict
from .. import literal, widgets
from ..server import classes as server
from ..server import visitor
from ..state import Ctx, set_sentence, t
from ..widgets import escape_md
from .class_teacher import throttled, wrong

SEAT = "_class_seat"
RECORDED = "_class_recorded"  # {(signature, question): the answer kept}
PROBLEMS = "_class_problems"  # {(signature, question): (answer, why it was not kept)}
FRESH = "_class_fresh"  # an answer was kept in this run: the handout is kept again
JOINED = "_class_joined"  # {code: the token this tab joined with}
STARTED = "_class_started"  # {(code, language)}: where the sentence box was given the teacher's sentence


@dataclass(frozen=True)
class Seat:
    info: ClassInfo
    student: Student
    token: str


def current() -> Seat | None:
    got = st.session_state.get(SEAT)
    return got if isinstance(got, Seat) else None


def seat(context: Ctx) -> Seat | None:
    """The class this tab's student sits in (from the link), with its banner; else the box to join one."""
    st.session_state.pop(SEAT, None)
    st.session_state.pop(FRESH, None)
    if not context.settings.classes:
        return None
    params = st.query_params
    code, token = params.get("class"), params.get("student")
    if code and token:
        found = server.store(context.settings).student(code, token)
        if found is not None:
            here = Seat(*found, token)
            st.session_state[SEAT] = here
            _banner(context, here)
            return here
        st.warning(t("class.place_unknown"), icon=":material/help:")
        for key in ("class", "student"):
            params.pop(key, None)
    if read_code(params.get("join")) is not None:  # a join link: the box comes first
        _join_box(context, params.get("join"))
    return None


def _banner(context: Ctx, here: Seat) -> None:
    with st.container(key="class_banner", border=True):
        name = escape_md(student_label(here.student, context.lang), limit=40)
        title = escape_md(here.info.title or here.info.code, limit=120)
        st.markdown(t("class.banner", title=title, name=name, code=here.info.code))
        if here.info.ended:
            st.info(t("class.ended_student"), icon=":material/event_busy:")
        else:  # a rerun reads the class again (seat)
            st.button(t("class.check"), key="class_check", icon=":material/refresh:", help=t("class.check_help"))


def footer(context: Ctx) -> None:
    """At the end of the lesson page, outside a class and without a join link: the box to type a
    class code in (below the lesson, which comes first on a phone)."""
    if current() is None and context.settings.classes and read_code(st.query_params.get("join")) is None:
        _join_box(context, None)


def _join_box(context: Ctx, code: str | None) -> None:
    invited = read_code(code) is not None
    box = st.container(key="class_join", border=True) if invited else st.expander(t("class.join_title"))
    with box:
        if invited:
            st.markdown(f"**{t('class.join_title')}**")
        with st.form("class_join_form", border=False):
            typed = st.text_input(t("class.code_label"), value=code or "", max_chars=12, key="class_code_input")
            name = st.text_input(
                t("class.name_label"), max_chars=40, key="class_name_input", placeholder=t("class.name_placeholder")
            )
            if st.form_submit_button(t("class.join"), type="primary"):
                _join(context, typed, name)


def _join(context: Ctx, typed: str, name: str) -> None:
    who = visitor.visitor()
    if throttled(who):
        return
    store = server.store(context.settings)
    code = read_code(typed)
    info = None if code is None else store.find(code)
    if info is None:
        st.error(wrong(who, t("class.no_such_code")), icon=":material/error:")
        return
    server.throttle.right(who)
    joined = st.session_state.setdefault(JOINED, {})
    # once a tab: a submit Streamlit hands the page again after its st.rerun must not seat a second student
    again = store.student(info.code, joined[info.code]) if info.code in joined else None
    try:
        student, token = (again[1], joined[info.code]) if again else store.join(info.code, name, context.lang)
    except Refused as refused:
        st.error(t(f"class.refused.{refused.reason}"), icon=":material/block:")
        return
    joined[info.code] = token
    st.query_params.pop("join", None)
    st.query_params["class"], st.query_params["student"] = info.code, token
    st.toast(t("class.joined", name=escape_md(student_label(student, context.lang), limit=40)))
    st.rerun()


def sentence(context: Ctx, here: Seat) -> tuple[str, str]:
    """The sentence and model this student's lesson reads: the teacher's for the page's language,
    or (where the teacher allows it) their own in the sentence box."""
    text, model = here.info.sentence(context.lang)
    if here.info.own_sentence:
        started = st.session_state.setdefault(STARTED, set())
        if (here.info.code, context.lang) not in started:  # the box starts from the teacher's sentence, once
            started.add((here.info.code, context.lang))
            set_sentence(text)
        return widgets.sentence_box(context), model
    with st.container(key="class_sentence"):
        st.caption(t("class.sentence_label"))
        literal.literal(text)
    return text, model


def closed(step: str) -> bool:
    """Whether the teacher has not opened `step` (one of lesson.STEPS) for this tab's class."""
    here = current()
    return here is not None and step not in here.info.open_steps


def record(context: Ctx, signature: str, text: str, question: str, answer: str, right: bool, shown: Verdict) -> None:
    """Keep a checked answer once (a rerun with the same answer keeps nothing new), then say "saved",
    or why it could not be kept."""
    here = current()
    if here is None:
        return
    session = st.session_state
    kept, problems = session.setdefault(RECORDED, {}), session.setdefault(PROBLEMS, {})
    key = (signature, question)
    if kept.get(key) != answer and problems.get(key, (None,))[0] != answer:
        try:
            given = Given(question, answer, right, shown.key, dict(shown.fields), text)
            server.store(context.settings).record(here.info.code, here.token, given)
            kept[key] = answer
            problems.pop(key, None)
            session[FRESH] = True
        except Refused as refused:
            problems[key] = (answer, refused.reason)
    if kept.get(key) == answer:
        st.caption(t("class.saved"), help=t("class.saved_help"))
    elif key in problems:
        st.warning(t(f"class.refused.{problems[key][1]}"), icon=":material/block:")


def keep_handout(context: Ctx, page: Callable[[], str]) -> None:
    """After an answer was kept: the student's handout as they would download it, for the teacher."""
    here = current()
    if here is None or not st.session_state.get(FRESH):
        return
    with contextlib.suppress(Refused):  # the class was deleted meanwhile: nothing to keep it for
        server.store(context.settings).save_handout(here.info.code, here.token, page())
