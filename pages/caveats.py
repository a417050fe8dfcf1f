"""Caveats: what an attention map does not say, each point with its source, and live numbers
for the sentence on screen."""

from attnviz.app import widgets
from attnviz.app.sections import caveats as section
from attnviz.app.sections import faithfulness, sinks

context = widgets.page_header("caveats.title", "caveats.intro", markdown=True)
section.points()
subject = section.live_subject(context)
if subject is not None:
    section.sinks(context, subject)
    sinks.sink_heads(context, subject)
    section.agreement(context, subject)
faithfulness.average_scoreboard(context)
section.references()
