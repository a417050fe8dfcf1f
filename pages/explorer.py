"""Explorer (the landing page): one sentence, every layer and head, four views of the focus."""

import streamlit as st

from attnviz.app import widgets
from attnviz.app.sections import ablation, sinks
from attnviz.app.sections import explorer as section

c = widgets.page_header("explorer.title", "explorer.intro")
focus = section.analysis(c)
if focus is None:
    st.stop()
focus = ablation.switch(c, focus)
focus = sinks.hide_switch(c, focus)

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
ablation.effect(c, focus)

st.divider()
section.token_focus_section(c, focus)
st.divider()
section.cost_section(c, focus)
st.divider()
section.numbers_section(focus)
