"""How far attention explains. Methods on an `Attention` or an array, numpy in and out (rollout,
flow, head statistics, rank agreement, minimal and sentence pairs, sinks), and methods that run a
model through its Runner (norm-based weights, attributions, head ablation, whole-layer
contributions, the faithfulness scoreboard, the logit lens); each module names its source.
Row i of every (n, n) map is where token i looks.
"""

from __future__ import annotations

from .ablation import Ablation, HeadImportance, PruningCurve, ablate, head_importance, pruning_curves
from .agreement import agreement, kendall_tau, share, spearman_rho
from .attributions import completeness_gap, input_x_gradient, integrated_gradients, occlusion
from .composition import COMPOSITION_KINDS, Composition, composing_heads, composition
from .context_mixing import METHODS as CONTRIBUTION_METHODS
from .context_mixing import VALUE_ZEROING_MAX_TOKENS, Contributions, contributions, contributions_all
from .flow import FLOW_MAX_N_ALL, FLOW_MAX_N_ROW, FlowTooLarge, flow, flow_limit
from .heads import (
    BROAD_ENTROPY,
    ENTROPY_SMOOTHING,
    HEAD_KINDS,
    LABEL_SHARE,
    head_kinds,
    head_labels,
    head_stats,
    sink_shares,
)
from .logit_lens import LogitLens, logit_lens
from .norms import NormWeights, norm_reconstruction, norm_weights
from .pairs import MinimalPair, across_share, find_token, minimal_pair, pair_blocks, pair_segments
from .rollout import rollout, rollout_layers
from .scoreboard import FAITHFULNESS_MAX_TOKENS, SCOREBOARD_METHODS, Scoreboard, ScoreRow, faithfulness
from .sinks import SINK_THRESHOLD, SinkScores, hide_sinks, removed_share, sink_scores
from .sources import SCORE_SOURCES_MAX_TOKENS, ScoreSources, score_sources
from .value_norms import PassValues, attend_keeping_values, moved_share, value_norms

__all__ = [
    "BROAD_ENTROPY",
    "COMPOSITION_KINDS",
    "CONTRIBUTION_METHODS",
    "ENTROPY_SMOOTHING",
    "FAITHFULNESS_MAX_TOKENS",
    "FLOW_MAX_N_ALL",
    "FLOW_MAX_N_ROW",
    "HEAD_KINDS",
    "LABEL_SHARE",
    "SCOREBOARD_METHODS",
    "SCORE_SOURCES_MAX_TOKENS",
    "SINK_THRESHOLD",
    "VALUE_ZEROING_MAX_TOKENS",
    "Ablation",
    "Composition",
    "Contributions",
    "FlowTooLarge",
    "HeadImportance",
    "LogitLens",
    "MinimalPair",
    "NormWeights",
    "PassValues",
    "PruningCurve",
    "ScoreRow",
    "ScoreSources",
    "Scoreboard",
    "SinkScores",
    "ablate",
    "across_share",
    "agreement",
    "attend_keeping_values",
    "completeness_gap",
    "composing_heads",
    "composition",
    "contributions",
    "contributions_all",
    "faithfulness",
    "find_token",
    "flow",
    "flow_limit",
    "head_importance",
    "head_kinds",
    "head_labels",
    "head_stats",
    "hide_sinks",
    "input_x_gradient",
    "integrated_gradients",
    "kendall_tau",
    "logit_lens",
    "minimal_pair",
    "moved_share",
    "norm_reconstruction",
    "norm_weights",
    "occlusion",
    "pair_blocks",
    "pair_segments",
    "pruning_curves",
    "removed_share",
    "rollout",
    "rollout_layers",
    "score_sources",
    "share",
    "sink_scores",
    "sink_shares",
    "spearman_rho",
    "value_norms",
]
