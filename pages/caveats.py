"""Caveats: what an attention map does not say, each point with its source, and live numbers
for the sentence on screen."""

import streamlit as st

from attnviz.app import widgets
from attnviz.app.sections import caveats as section
from attnviz.app.sections import faithfulness, pictures, sinks

context = widgets.page_header("caveats.title", "caveats.intro", markdown=True)
pictures.caveats_picture(context)  # a picture on the first screen, the papers after it (issue 23.4)
points = st.container()  # filled once the model is known: a decoder's sinks point names its first token
subject = section.live_subject(context)
with points:
    section.points(decoder=subject is not None and subject.att.causal)
if subject is not None:
    section.sinks(context, subject)
    sinks.sink_heads(context, subject)
    section.agreement(context, subject)
faithfulness.average_scoreboard(context)
section.references()
