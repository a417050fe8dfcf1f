"""Explain: how far the attention of one token explains anything. Raw attention next to rollout,
flow, norm-based weights and two attributions; their agreement; head statistics; a minimal pair."""

import streamlit as st

from attnviz.app import state, widgets
from attnviz.app.sections import explain as section

c = state.ctx()
st.title(state.t("explain.title"))
st.caption(state.t("explain.intro"))
widgets.show_notices()
subject = section.analysis(c)
if subject is None:
    st.stop()

query, layer = section.pickers(subject)
section.mixing_series(c, subject, query, layer)
occlusion = section.attributions(c, subject, query)
section.bars(c, subject, query, layer)
if occlusion is not None:
    section.agreement_table(subject, occlusion)
section.head_statistics(c, subject)
section.minimal_pair(c, subject)
