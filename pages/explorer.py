"""Explorer (the landing page): one sentence, every layer and head, four views of the focus.
The title and the sentence box come before the sections (and torch) are imported: on a cold
server they show while the model loads (app/warmup.py)."""

import streamlit as st

from attnviz.app import widgets

c = widgets.page_header("explorer.title", "explorer.intro")
text = widgets.sentence_box(c)

from attnviz.app.sections import ablation  # noqa: E402
from attnviz.app.sections import explorer as section  # noqa: E402

focus = section.analysis(c, text)
if focus is None:
    st.stop()
focus = ablation.switch(c, focus)
focus, draw_sinks_switch = section.sinks_switch(c, focus)

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
draw_sinks_switch()  # into its place above the views, once they are sent (a second forward pass)
ablation.effect(c, focus)

st.divider()
section.token_focus_section(c, focus)
st.divider()
section.cost_section(c, focus)
st.divider()
section.numbers_section(focus)
