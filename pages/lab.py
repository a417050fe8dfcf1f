"""From-scratch lab: our own encoder next to the pretrained model, switches that take it apart,
one head step by step; below them, each opened on demand, the order demo (no positions, no
order), sparse patterns, cross-attention, sentence pairs and FlashAttention's tiles."""

import streamlit as st

from attnviz.app import widgets
from attnviz.app.sections import cross
from attnviz.app.sections import flash as flash_section
from attnviz.app.sections import lab as section
from attnviz.app.sections import sparse as sparse_section

context = widgets.page_header("lab.title", "lab.intro")
opts = section.switches()
pair = section.analysis(context, opts)
if pair is None:
    st.stop()

section.side_by_side(context, pair)
section.steps(context, pair)
# Below the fold, each in an expander: computed and drawn once opened (issue 24.1; kept: state.LAB_SECTIONS)
widgets.lazily("lab_order_open", "lab.order_title", section.order_demo, context, pair)
widgets.lazily("lab_sparse_open", "sparse.title", sparse_section.show, context, pair)
widgets.lazily("lab_cross_open", "cross.title", cross.cross_lab, context, pair)
widgets.lazily("lab_pairs_open", "pairs.title", cross.pairs, context)
widgets.lazily("lab_flash_open", "flash.title", flash_section.show, context, pair)
