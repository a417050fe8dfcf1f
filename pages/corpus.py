"""Corpus: what each head does over many sentences. Run a bundled or uploaded corpus in the
background, then per-head statistics with their spread, the sentences where a head is most and
least typical, and the query-key atlas of one head."""

from attnviz.app import runners, widgets
from attnviz.app.sections import corpus as section
from attnviz.app.sections import corpus_atlas as atlas
from attnviz.app.sections import pictures

context = widgets.page_header("corpus.title", "corpus.intro")
if section.finished() is None:
    pictures.corpus_picture(context)  # what a run gives, before the visitor starts one (issue 23.4)
choice = section.source(context)
loaded = runners.load_runner(context)
if loaded is not None:
    section.run_controls(context, loaded, choice)
section.progress()
job = section.finished()
# no st.stop() here: app.py writes the values the page clamped back into the link after the page
if job is not None and section.summary(job):
    stat = section.grid(context, job)
    layer, head = atlas.head_pickers(job)
    section.typical(context, job, stat, layer, head)
    atlas.atlas(context, job, layer, head)
