"""The Streamlit app's own helpers: the only part of `attnviz` that imports streamlit
(tests/test_layout.py keeps it so). Pages in pages/ stay thin and call these: sections/ (what
each page shows), canvas/ (the canvas charts), coldstart/ (a cold server's start), server/ (the
process-wide machinery: registry, queues, budgets, jobs).
"""
