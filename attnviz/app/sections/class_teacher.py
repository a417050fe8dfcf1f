"""The teacher's side of a class, on the /class page: the form that starts one, and opening it
again from the teacher link (`?class=CODE&teacher=SECRET`, from any browser). A wrong secret is
refused, and a visitor's wrong secrets and codes are bounded (app/server/classes.py Throttle).
The dashboard itself is app/sections/class_dashboard.py."""

from __future__ import annotations

import math
from dataclasses import dataclass

import streamlit as st

from ... import i18n
from ...classes import ClassInfo, ClassSpec, Refused
from ...lesson import STEPS
from ...models.tokens import TextRefused, check_text
from ...models.unknown_tokens import model_for_language
from .. import widgets
from ..readers import model_label
from ..server import classes as server
from ..server import visitor
from ..sidebar import LANGUAGE_NAMES
from ..state import Ctx, t


@dataclass(frozen=True)
class Opened:
    info: ClassInfo
    secret: str


def opened(context: Ctx) -> Opened | None:
    """The class the teacher link names, once its secret is checked; None (with why) otherwise."""
    params = st.query_params
    code, secret = params.get("class"), params.get("teacher")
    if not code or not secret:
        return None
    who = visitor.visitor()
    if throttled(who):
        return None
    try:
        info = server.store(context.settings).teacher(code, secret)  # the store reads both
    except Refused as refused:
        message = t("class.secret_wrong") if refused.reason == "secret" else t("class.no_such_code")
        st.error(wrong(who, message), icon=":material/lock:")
        return None
    server.throttle.right(who)
    return Opened(info, str(secret))


def throttled(who: str) -> bool:
    """Whether this visitor waits after too many wrong codes or secrets (the page says how long)."""
    wait = server.throttle.wait(who)
    if wait > 0:
        st.error(t("class.wait", s=f"{math.ceil(wait)}"), icon=":material/hourglass_top:")
    return wait > 0


def wrong(who: str, message: str) -> str:
    """`message` for a wrong code or secret, counted, with the wait it now costs."""
    delay = server.throttle.wrong(who)
    return message + (" " + t("class.wait", s=f"{math.ceil(delay)}") if delay else "")


def _sentence_inputs(context: Ctx, lang: str) -> tuple[str, str]:
    options = list(context.settings.model_choices)
    text = st.text_area(
        t(f"class.sentence_{lang}"), value=i18n.examples(lang)["default"], height=68, key=f"class_new_sentence_{lang}"
    )
    model = st.selectbox(t(f"class.model_{lang}"), options, index=options.index(model_for_language(lang, options)),
                         format_func=model_label, key=f"class_new_model_{lang}")  # fmt: skip
    return text, str(model)


def start_form(context: Ctx) -> None:
    """The form that starts a class; on submit the page opens as its teacher link."""
    if not context.settings.classes:
        st.info(t("class.off"), icon=":material/block:")
        return
    if st.session_state.pop("_class_deleted", False):
        st.success(t("class.deleted"), icon=":material/delete:")
    with st.form("class_new", border=True):
        st.subheader(t("class.new"))
        title = st.text_input(t("class.title_label"), max_chars=120, key="class_new_title")
        lang = st.radio(
            t("class.lang_label"), i18n.LANGUAGES, index=i18n.LANGUAGES.index(context.lang),
            format_func=LANGUAGE_NAMES.__getitem__, horizontal=True, key="class_new_lang",
        )  # fmt: skip
        left, right = st.columns(2)
        with left:
            en = _sentence_inputs(context, "en")
        with right:
            zh = _sentence_inputs(context, "zh")
        own = st.checkbox(t("class.own_label"), key="class_new_own")
        fmt = widgets.option_labels("class.q.{}")
        steps = st.multiselect(
            t("class.steps_label"), STEPS, default=list(STEPS), format_func=fmt, key="class_new_steps"
        )
        cap = context.settings.class_max_students
        most = st.number_input(t("class.cap_label"), 1, cap, min(cap, 40), key="class_new_cap")
        if st.form_submit_button(t("class.start"), type="primary"):
            _start(context, ClassSpec(title, str(lang), {"en": en, "zh": zh}, bool(own), tuple(steps), int(most)))


def _start(context: Ctx, spec: ClassSpec) -> None:
    try:
        for text, model in spec.sentences.values():
            check_text(text, context.settings.max_chars)
            context.settings.check_model(model)
    except TextRefused as refused:
        st.error(t(refused.key, **refused.values), icon=":material/error:")
        return
    except ValueError as exc:
        st.error(t("err.model_not_allowed") + " " + str(exc), icon=":material/error:")
        return
    started = server.store(context.settings).create(spec)
    st.query_params["class"], st.query_params["teacher"] = started.info.code, started.secret
    st.rerun()
