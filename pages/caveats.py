"""Caveats: what an attention map does not say, each point with its source, and live numbers
for the sentence on screen."""

import streamlit as st

from attnviz.app import state, widgets
from attnviz.app.sections import caveats as section

c = state.ctx()
st.title(state.t("caveats.title"))
st.markdown(state.t("caveats.intro"))
widgets.show_notices()
section.points()
subject = section.live_subject(c)
if subject is not None:
    section.sinks(c, subject)
    section.agreement(c, subject)
section.references()
