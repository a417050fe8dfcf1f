"""Explain: how far the attention of one token explains anything. Raw attention next to rollout,
flow, norm-based weights and two attributions; their agreement; head statistics; a minimal pair."""

import streamlit as st

from attnviz.app import widgets
from attnviz.app.sections import ablation, faithfulness
from attnviz.app.sections import explain as section

context = widgets.page_header("explain.title", "explain.intro")
subject = section.analysis(context)
if subject is None:
    st.stop()

query, layer = section.pickers(subject)
section.mixing_series(context, subject, query, layer)
occlusion = section.attributions(context, subject, query)
section.bars(context, subject, query, layer)
if occlusion is not None:
    section.agreement_table(subject, occlusion)
faithfulness.contribution_section(context, subject, layer)
faithfulness.scoreboard_section(context, subject, query)
section.head_statistics(context, subject)
ablation.importance(context, subject)
section.minimal_pair(context, subject)
