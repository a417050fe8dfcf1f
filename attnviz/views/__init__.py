"""Plotly figure builders: data in, `plotly.graph_objects.Figure` out. Never imports streamlit.

One module per family of views:

    heatmaps.py   heatmap (one head, full resolution), matrix (the lab's small labelled steps)
    grid.py       model_view (all layers x heads as thumbnails), layer_head_grid (a number a head)
    head_views.py head_view (bertviz-style query -> key lines)
    graph.py      graph_view (tokens on a circle, edges above a threshold)
    charts.py     token_bars, token_focus, cost_sweep
    ablation.py   pruning_curve, importance_grid, attention_change, ablation_effect (heads switched off)
    corpus.py     corpus_grid (a statistic over a corpus, with its spread), query_key_atlas
    evidence.py   contribution_map, deletion_curves, layer_agreement (whole-layer methods, the scoreboard)
    pick.py       clickable markers and reading clicks back (model_view_pick, token_pick)
    training.py   a training run: training_curves, snapshot_grid (slider + play), head_score_curves
    _base.py      what they share: the figure constructor, token axes, escaping, colours, titles

A module is never named like the function it exports (heatmaps.py, not heatmap.py): the package
re-exports the function under that name, which would hide the module from
`import attnviz.views.heatmap as m` and from mock.patch paths.

Conventions every view shares:
- Layers and heads are 0-indexed everywhere, in labels too ("layer 2, head 5"): the same numbers
  as `Attention.head(layer, head)` and the app's widgets.
- Token axes use unique category keys ("the (5)") with the bare token as tick text, since
  Plotly merges equal category labels. Tokens are escaped (& < >) wherever they land, tick and
  hover text included: Plotly reads "<s>" as markup, and a visitor may type anything.
- No background, font or text colours are set: Streamlit's theme (light or dark) or the
  notebook's template decides. Line and marker colours are mid-tones readable on both.
- Numpy float32 arrays go to Plotly as they are: plotly >= 6 serialises them as base64 typed
  arrays ({"dtype": "f4", "bdata": ..., "shape": "n, n"}), 4 bytes a number (plotly/plotly.py#4470).
"""

from __future__ import annotations

from ._base import MAX_TICK_LABELS, head_label
from .ablation import ablation_effect, attention_change, importance_grid, pruning_curve
from .charts import cost_sweep, token_bars, token_focus
from .corpus import atlas_pick, corpus_grid, query_key_atlas
from .evidence import contribution_map, deletion_curves, layer_agreement
from .graph import DEFAULT_MAX_EDGES, graph_view
from .grid import layer_head_grid, model_view
from .head_views import DEFAULT_MAX_LINKS, head_view
from .heatmaps import heatmap, matrix
from .pick import model_view_pick, token_pick
from .training import head_score_curves, snapshot_grid, training_curves

__all__ = [
    "DEFAULT_MAX_EDGES",
    "DEFAULT_MAX_LINKS",
    "MAX_TICK_LABELS",
    "ablation_effect",
    "atlas_pick",
    "attention_change",
    "contribution_map",
    "corpus_grid",
    "cost_sweep",
    "deletion_curves",
    "graph_view",
    "head_label",
    "head_score_curves",
    "head_view",
    "heatmap",
    "importance_grid",
    "layer_agreement",
    "layer_head_grid",
    "matrix",
    "model_view",
    "model_view_pick",
    "pruning_curve",
    "query_key_atlas",
    "snapshot_grid",
    "token_bars",
    "token_focus",
    "token_pick",
    "training_curves",
]
