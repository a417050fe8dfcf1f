"""Caveats: what an attention map does not say, each point with its source, and live numbers
for the sentence on screen."""

from attnviz.app import widgets
from attnviz.app.sections import caveats as section
from attnviz.app.sections import faithfulness, sinks

c = widgets.page_header("caveats.title", "caveats.intro", markdown=True)
section.points()
subject = section.live_subject(c)
if subject is not None:
    section.sinks(c, subject)
    sinks.sink_heads(c, subject)
    section.agreement(c, subject)
faithfulness.average_scoreboard(c)
section.references()
