"""Guided lesson: six steps on the visitor's own sentence (tokens, one head, all heads, the
pronoun finds its word, a head switched off, what the picture does not tell), each with a
picture and a checked question, and a printable handout. In a class (the teacher's /class page),
on the teacher's sentence, with every answer kept."""

import streamlit as st

from attnviz.app import widgets

context = widgets.page_header("lesson.title", "lesson.intro")

from attnviz.app.sections import classroom  # noqa: E402
from attnviz.app.sections import lesson as section  # noqa: E402
from attnviz.app.sections import lesson_steps as steps  # noqa: E402

seat = classroom.seat(context)
text, model = classroom.sentence(context, seat) if seat else (widgets.sentence_box(context), None)
run = section.prepare(context, text, model)
if run is None:
    st.stop()
run = steps.steps(context, run)
section.handout(context, run)
classroom.footer(context)
