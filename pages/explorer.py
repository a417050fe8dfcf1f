"""Explorer (the landing page): one sentence, every layer and head, four views of the focus."""

import streamlit as st

from attnviz.app import state, widgets
from attnviz.app.sections import explorer as section

c = state.ctx()
st.title(state.t("explorer.title"))
st.caption(state.t("explorer.intro"))
widgets.show_notices()
focus = section.analysis(c)
if focus is None:
    st.stop()

st.divider()
left, right = st.columns(2, gap="large")
with left:
    section.heatmap_view(c, focus)
with right:
    section.grid_view(c, focus)
left, right = st.columns(2, gap="large")
with left:
    section.head_lines_view(c, focus)
with right:
    section.graph_section(c, focus)

st.divider()
section.token_focus_section(c, focus)
st.divider()
section.cost_section(c, focus)
st.divider()
section.numbers_section(focus)
