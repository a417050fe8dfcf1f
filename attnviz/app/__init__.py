"""The Streamlit app's own helpers: the only part of `attnviz` that imports streamlit
(tests/test_layout.py keeps it so). Pages in pages/ stay thin and call these.

    nav.py        the pages: file, title, icon, URL path
    state.py      session state: the context a page runs in, what survives a page switch
    urls.py       shared links: strict parsing of URL values, what the URL carries
    sidebar.py    language, model, device, token limit
    runners.py    models and results, loaded once per process, bounded, failures remembered
    work.py       long explanations: progress, cancel, a per-visitor budget
    widgets.py    the sentence box, pickers, tokens, errors and notices
    charts.py     plotly charts and their click callbacks
    downloads.py  figure and number exports
    sections/     what each page shows, one function a section
"""
