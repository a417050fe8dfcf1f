"""The teacher's controls under the dashboard: which steps are open ("everyone on step 3 now",
or any set), ending the class, the results as CSV and every student's handout, deleting the
class. Each action carries the teacher secret to the store, which checks it again."""

from __future__ import annotations

import contextlib
import io
import zipfile

import streamlit as st

from ...classes import Refused, results_csv
from ...lesson import STEPS
from .. import widgets
from ..server import classes as server
from ..state import Ctx, t
from .class_dashboard import PROJECTOR
from .class_teacher import Opened


def projector_switch() -> None:
    st.toggle(t("class.projector"), key=PROJECTOR, help=t("class.projector_help"))


def _steps(context: Ctx, opened: Opened) -> None:
    store, code, secret = server.store(context.settings), opened.info.code, opened.secret
    fmt = widgets.option_labels("class.q.{}")
    with st.container(key="class_steps", border=True):
        st.markdown(f"**{t('class.steps_title')}**")
        left, right = st.columns([2, 1], vertical_alignment="bottom")
        upto = left.selectbox(t("class.all_on"), STEPS, format_func=fmt, key="class_all_on")
        if right.button(t("class.all_on_go"), key="class_all_on_go", width="stretch"):
            store.set_open_steps(code, secret, STEPS[: STEPS.index(upto) + 1])
            st.rerun()
        chosen = st.multiselect(t("class.steps_label"), STEPS, default=list(opened.info.open_steps), format_func=fmt,
                                key=f"class_open_{','.join(opened.info.open_steps)}")  # fmt: skip
        if st.button(t("class.steps_apply"), key="class_steps_apply"):
            store.set_open_steps(code, secret, tuple(chosen))
            st.rerun()


def _downloads(context: Ctx, opened: Opened) -> None:
    store, code, secret, lang = server.store(context.settings), opened.info.code, opened.secret, context.lang
    a, b = st.columns(2)
    name = f"attnviz-class-{code}"

    def results() -> str:
        return results_csv(code, store.students(code, secret), store.answers(code, secret), lang)

    def handouts() -> bytes:
        """Every student's latest handout in one ZIP; files named by number only (names are visitor text)."""
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for student in store.students(code, secret):
                page = store.handout(code, secret, student.number)
                if page:
                    z.writestr(f"attnviz-{code}-student-{student.number:03d}.html", page)
        return out.getvalue()

    a.download_button(t("class.csv"), data=results, file_name=f"{name}.csv", mime="text/csv", key="class_csv",
                      on_click="ignore", icon=":material/download:", width="stretch")  # fmt: skip
    b.download_button(t("class.handouts"), data=handouts, file_name=f"{name}-handouts.zip", mime="application/zip",
                      key="class_handouts", on_click="ignore", icon=":material/folder_zip:", width="stretch")  # fmt: skip


def controls(context: Ctx, opened: Opened) -> None:
    store, code, secret = server.store(context.settings), opened.info.code, opened.secret
    if not opened.info.ended:
        _steps(context, opened)
    _downloads(context, opened)
    with st.container(key="class_end", border=True):
        if not opened.info.ended and st.button(t("class.end"), key="class_end_go", icon=":material/stop_circle:"):
            store.end(code, secret)
            st.rerun()
        sure = st.checkbox(t("class.delete_sure"), key="class_delete_sure")
        if st.button(
            t("class.delete"), key="class_delete_go", disabled=not sure, type="primary", icon=":material/delete:"
        ):
            with contextlib.suppress(Refused):  # deleted from another tab already
                store.delete(code, secret)
            for key in ("class", "teacher"):
                st.query_params.pop(key, None)
            st.session_state["_class_deleted"] = True
            st.rerun()
