"""Training lab: train a tiny causal model in seconds and watch its heads specialise (copy,
reverse, induction, or the next character of a pasted text); open it in the explorer after."""

from attnviz.app import widgets
from attnviz.app.sections import cross, digits, pictures, write
from attnviz.app.sections import training as section

context = widgets.page_header("train.title", "train.intro")
pictures.training_picture(context)  # the map a head must learn, before the controls (issue 23.4)
section.controls(context)
section.open_in_explorer(context)
write.trained_panel(context)  # its model writes token by token (issue 52)
section.live(context)
cross.seq2seq(context)
digits.digits(context)
