"""The teacher's dashboard of a class: the code, the join link and its QR code; live every
REFRESH_S seconds, where each student is, each question's counts with its most common wrong answer
and what the page told it, and a grid of students by questions. In projector mode the type is large
and nothing private is on the screen: no teacher link, no controls, no names. Names and answers are
students' text: escaped for Markdown (widgets.escape_md) in the tables, which render it."""

from __future__ import annotations

import re
import urllib.parse

import pandas as pd
import streamlit as st

from ...classes import QUESTIONS, Board, student_label, summarise
from ...lesson import Verdict
from .. import copy_link
from ..server import classes as server
from ..state import Ctx, browser, t
from ..widgets import escape_md
from .class_teacher import Opened

REFRESH_S = 3
_URL = re.compile(r"https?://[^\s\"'<>\\]{1,300}")
PROJECTOR = "class_projector"


def projector() -> bool:
    return bool(st.session_state.get(PROJECTOR))


def _base(context: Ctx) -> str:
    """The app's address as students reach it: the setting, else what the teacher's browser shows."""
    if context.settings.public_url:
        return context.settings.public_url
    url = browser("url") or ""
    if not _URL.fullmatch(url):
        return ""
    parts = urllib.parse.urlsplit(url)
    path = parts.path[: -len("/class")] if parts.path.endswith("/class") else parts.path.rsplit("/", 1)[0]
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def invite(context: Ctx, opened: Opened) -> None:
    """The class's title, code, join link and QR code; the private teacher link outside projector mode."""
    import segno

    info, big = opened.info, projector()
    if big:
        st.html(
            "<style>.stMainBlockContainer{font-size:1.6rem} .st-key-class_code p{font-size:4rem !important}</style>"
        )
    base = _base(context)
    link = f"{base}/lesson?join={info.code}"
    left, right = st.columns([3, 2])
    with left:
        st.subheader(escape_md(info.title or t("class.untitled"), limit=120))
        with st.container(key="class_code"):
            st.markdown(t("class.code_is", code=info.code))
        st.caption(t("class.join_link"))
        copy_link.copy_link(link, key="class_join_copy")
        if info.ended:
            st.info(t("class.ended_teacher"), icon=":material/event_busy:")
    # medium error correction; a module of 10 px reads from the back of a room on a projector
    qr = segno.make(link, error="m").svg_inline(scale=10, border=2)
    with right, st.container(key="class_qr"):
        st.image(qr, width=420 if big else 260, caption=t("class.qr_caption"))
    if not big:
        with st.expander(t("class.teacher_link"), icon=":material/key:"):
            st.caption(t("class.teacher_link_help"))
            copy_link.copy_link(f"{base}/class?class={info.code}&teacher={opened.secret}", key="class_teacher_copy")


def _questions_table(b: Board, lang: str) -> pd.DataFrame:
    rows = []
    for q in b.questions:
        wrong = "" if q.wrong_answer is None else f"{escape_md(q.wrong_answer, limit=60)} ({q.wrong_count})"
        told = "" if q.told is None else Verdict(False, *q.told).why(lang, lambda s: escape_md(s, limit=60))
        rows.append({
            t("class.col.question"): t(f"class.q.{q.step}"),
            t("class.col.answered"): q.answered,
            t("class.col.right"): q.right,
            t("class.col.wrong"): wrong,
            t("class.col.told"): told,
        })  # fmt: skip
    return pd.DataFrame(rows)


def _grid(b: Board, lang: str, names: bool) -> pd.DataFrame:
    # a question's number ("4a"): the narrow column heading (its name is in the table above)
    numbers = [t(f"class.q.{q}").split(" ", 1)[0] for q in QUESTIONS]
    rows = []
    for i, row in enumerate(b.rows):
        who = escape_md(student_label(row.student, lang), limit=40) if names else str(i + 1)
        where = t("class.done") if row.at == "done" else t(f"class.q.{row.at}")
        rows.append({t("class.col.student"): who, t("class.col.at"): where,
                     **dict(zip(numbers, row.marks, strict=True))})  # fmt: skip
    return pd.DataFrame(rows)


@st.fragment(run_every=REFRESH_S)
def board(context: Ctx, opened: Opened) -> None:
    """The live part: re-read from the database every REFRESH_S seconds, whichever replica answers.
    The page calls it after the controls (drawn above them): a fragment's timed rerun landing
    while the page's own run is still going can drop a widget value sent meanwhile
    (streamlit/streamlit#10805, #14064), so the controls are registered before the first tick."""
    store, code = server.store(context.settings), opened.info.code
    try:
        info = store.teacher(code, opened.secret)
        students, answers = store.students(code, opened.secret), store.answers(code, opened.secret)
    except Exception:  # deleted meanwhile: the controls say so on the next full run
        st.rerun(scope="app")
    b, lang = summarise(students, answers, info.open_steps), context.lang
    with st.container(key="class_board"):
        a, c, d = st.columns(3)
        a.metric(t("class.students"), len(students))
        c.metric(t("class.answers"), b.answers)
        d.metric(t("class.open_steps"), len(info.open_steps))
        with st.container(key="class_questions"):
            st.table(_questions_table(b, lang), hide_index=True)
        if b.rows:
            with st.container(key="class_grid"):
                st.caption(t("class.grid_caption"))
                st.table(_grid(b, lang, names=not projector()), hide_index=True)
        else:
            st.caption(t("class.nobody_yet"))
