"""Explain: how far the attention of one token explains anything. Raw attention next to rollout,
flow, norm-based weights and two attributions; their agreement; head statistics; a minimal pair."""

import streamlit as st

from attnviz.app import widgets
from attnviz.app.sections import ablation, faithfulness
from attnviz.app.sections import explain as section

c = widgets.page_header("explain.title", "explain.intro")
subject = section.analysis(c)
if subject is None:
    st.stop()

query, layer = section.pickers(subject)
section.mixing_series(c, subject, query, layer)
occlusion = section.attributions(c, subject, query)
section.bars(c, subject, query, layer)
if occlusion is not None:
    section.agreement_table(subject, occlusion)
faithfulness.contribution_section(c, subject, layer)
faithfulness.scoreboard_section(c, subject, query)
section.head_statistics(c, subject)
ablation.importance(c, subject)
section.minimal_pair(c, subject)
