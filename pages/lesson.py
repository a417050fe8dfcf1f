"""Guided lesson: six steps on the visitor's own sentence (tokens, one head, all heads, the
pronoun finds its word, a head switched off, what the picture does not tell), each with a
picture and a checked question, and a printable handout."""

import streamlit as st

from attnviz.app import widgets

context = widgets.page_header("lesson.title", "lesson.intro")
text = widgets.sentence_box(context)

from attnviz.app.sections import lesson as section  # noqa: E402
from attnviz.app.sections import lesson_steps as steps  # noqa: E402

run = section.prepare(context, text)
if run is None:
    st.stop()
run = steps.steps(context, run)
section.handout(context, run)
