"""How far attention explains: rollout, flow, norm-based weights, attributions, head statistics.

Methods on an `Attention` or an array, numpy in and out (heads.py computes with torch inside):
    rollout.py       rollout, rollout_layers                  (Abnar & Zuidema 2020)
    flow.py          flow, flow_limit                         (same paper)
    heads.py         head_stats, head_kinds, head_labels, sink_shares     (Clark et al. 2019)
    agreement.py     kendall_tau, spearman_rho, agreement     (Jain & Wallace 2019)
    pairs.py         minimal_pair, find_token
    sentence_pairs.py pair_blocks, across_share: how much A reads B and B reads A
Methods that run a model (take a Runner and a text; batches go through the background lane):
    norms.py         norm_weights, norm_reconstruction        (Kobayashi et al. 2020)
    value_norms.py   value_norms, moved_share                 (the same, no (n, n) maps kept;
                     attend_keeping_values, PassValues         from the views' own pass)
    attributions.py  occlusion, input_x_gradient, integrated_gradients, completeness_gap
    ablation.py      ablate, head_importance, pruning_curves     (Michel et al. 2019)
    context_mixing.py contributions, contributions_all         (whole layers: GlobEnc, ALTI,
                     decompose.py, value_zeroing.py             Value Zeroing; norms, attention)
    scoreboard.py    faithfulness (the scoreboard)             (leave-one-out, deletion, AOPC)
                     removal.py: tokens replaced by [MASK], the output's change
    logit_lens.py    logit_lens: each layer's next-token guess  (nostalgebraist 2020)
    sinks.py         sink_scores, hide_sinks                   (Gu et al. 2024; numpy only)
Row i of every (n, n) map is where token i looks.
"""

from __future__ import annotations

from .ablation import Ablation, HeadImportance, PruningCurve, ablate, head_importance, pruning_curves
from .agreement import agreement, kendall_tau, share, spearman_rho
from .attributions import completeness_gap, input_x_gradient, integrated_gradients, occlusion
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
from .pairs import MinimalPair, find_token, minimal_pair
from .rollout import rollout, rollout_layers
from .scoreboard import FAITHFULNESS_MAX_TOKENS, SCOREBOARD_METHODS, Scoreboard, ScoreRow, faithfulness
from .sentence_pairs import across_share, pair_blocks, pair_segments
from .sinks import SINK_THRESHOLD, SinkScores, hide_sinks, removed_share, sink_scores
from .value_norms import PassValues, attend_keeping_values, moved_share, value_norms

__all__ = [
    "BROAD_ENTROPY",
    "CONTRIBUTION_METHODS",
    "ENTROPY_SMOOTHING",
    "FAITHFULNESS_MAX_TOKENS",
    "FLOW_MAX_N_ALL",
    "FLOW_MAX_N_ROW",
    "HEAD_KINDS",
    "LABEL_SHARE",
    "SCOREBOARD_METHODS",
    "SINK_THRESHOLD",
    "VALUE_ZEROING_MAX_TOKENS",
    "Ablation",
    "Contributions",
    "FlowTooLarge",
    "HeadImportance",
    "LogitLens",
    "MinimalPair",
    "NormWeights",
    "PassValues",
    "PruningCurve",
    "ScoreRow",
    "Scoreboard",
    "SinkScores",
    "ablate",
    "across_share",
    "agreement",
    "attend_keeping_values",
    "completeness_gap",
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
    "share",
    "sink_scores",
    "sink_shares",
    "spearman_rho",
    "value_norms",
]
