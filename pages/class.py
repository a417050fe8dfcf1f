"""A class in session, the teacher's page: start a class (its sentence and model for each
language, which steps are open), show its code, join link and QR code, and follow the room live;
open and close steps, end it, download the results and handouts, delete it. The teacher link
(code and secret) opens this page from any browser."""

import streamlit as st

from attnviz.app import widgets

context = widgets.page_header("class.title", "class.intro")

from attnviz.app.sections import class_controls as controls  # noqa: E402
from attnviz.app.sections import class_dashboard as dashboard  # noqa: E402
from attnviz.app.sections import class_teacher as teacher  # noqa: E402

opened = teacher.opened(context)
if opened is None:  # not st.stop(): the frame draws the sidebar's share box after the page
    teacher.start_form(context)
else:
    controls.projector_switch()
    dashboard.invite(context, opened)
    live = st.container()  # the live board goes here, drawn last (class_dashboard.board says why)
    if not dashboard.projector():
        controls.controls(context, opened)
    with live:
        dashboard.board(context, opened)
