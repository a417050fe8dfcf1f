"""Plotly figure builders, one module per family of views: data in, `go.Figure` out. A module is
never named like the function it exports (heatmaps.py, not heatmap.py): the re-export would hide it.

Conventions: layers and heads are 0-indexed everywhere, labels included. Token axes use unique
category keys ("the (5)") with the bare token as tick text; tokens are escaped (& < >) wherever
they land, since Plotly reads "<s>" as markup. No background or text colours are set (the theme
decides). Float32 arrays go to Plotly as they are: plotly >= 6 sends them as base64 typed arrays.
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
from .heatmaps import heatmap, heatmap_figure, matrix
from .pick import model_view_pick, token_pick
from .spec import HeatmapSpec, heatmap_spec
from .training import head_score_curves, snapshot_grid, training_curves

__all__ = [
    "DEFAULT_MAX_EDGES",
    "DEFAULT_MAX_LINKS",
    "MAX_TICK_LABELS",
    "HeatmapSpec",
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
    "heatmap_figure",
    "heatmap_spec",
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
