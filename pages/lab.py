"""From-scratch lab: our own encoder next to the pretrained model, switches that take it apart,
one head step by step, and the order demo (no positions, no order)."""

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
section.order_demo(context, pair)
sparse_section.show(context, pair)
cross.cross_lab(context, pair)
cross.pairs(context)
flash_section.show(context, pair)
