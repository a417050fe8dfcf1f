"""Explorer (the landing page): one sentence, every layer and head, four views of the focus.
The title and the sentence box come before the sections (and torch) are imported: on a cold
server they show while the model loads (app/coldstart/warmup.py)."""

import streamlit as st

from attnviz.app import widgets
from attnviz.app.coldstart import warmup

context = widgets.page_header("explorer.title", "explorer.intro")
text = widgets.sentence_box(context)

with warmup.loading(context, text):  # a cold server: the first map (numpy), then torch
    from attnviz.app import charts
    from attnviz.app.sections import ablation, decoder, why, write
    from attnviz.app.sections import explorer as section
    from attnviz.app.sections import long as long_mode

long_mode.section(context, text)  # past the in-memory limit: the long mode, and the page stops there

focus = section.analysis(context, text)
if focus is None:
    st.stop()
# The pictures come first on the screen; the switches that change them (heads off, after Michel
# et al.; hidden sinks) are read before the views are drawn but shown below them (issue 23.4).
pictures = st.container(key="explorer_pictures")  # first under the sentence on a phone (assets/style.css)
st.divider()
with st.container():
    focus = ablation.switch(context, focus)
    focus, draw_sinks_switch = section.sinks_switch(context, focus)
    charts.caption_switches(focus.settings)  # the images' captions name what is switched
with pictures:
    left, right = st.columns(2, gap="large")
    with left:
        section.heatmap_view(context, focus)
    with right:
        section.grid_view(context, focus)
    section.more_views(context, focus)  # head and graph views: computed only once opened (issue 24.1)
draw_sinks_switch()  # into its place under the views, once they are sent (a second forward pass)
ablation.effect(context, focus)
why.section(context, focus)  # a clicked cell of the map: why the head looks there (issue 53)
decoder.panel(context, focus)  # a decoder: the next word, the logit lens, rotary positions
write.panel(context, focus.loaded, focus.text)  # a causal model writes token by token (issue 52)

st.divider()
section.token_focus_section(context, focus)
st.divider()
section.cost_section(context, focus)
st.divider()
section.numbers_section(focus)
