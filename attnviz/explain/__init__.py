"""How far attention explains: rollout, flow, norm-based weights, attributions, head statistics.

Numpy-only methods (take an `Attention` or an array):
    rollout.py       rollout, rollout_layers                  (Abnar & Zuidema 2020)
    flow.py          flow, flow_limit                         (same paper)
    heads.py         head_stats, head_labels, sink_shares     (Clark et al. 2019)
    agreement.py     kendall_tau, spearman_rho, agreement     (Jain & Wallace 2019)
    pairs.py         minimal_pair, find_token
Methods that run a model (take a Runner and a text; batches go through the background lane):
    norms.py         norm_weights, norm_reconstruction        (Kobayashi et al. 2020)
    attributions.py  occlusion, input_x_gradient, integrated_gradients, completeness_gap
    ablation.py      ablate, head_importance, pruning_curves     (Michel et al. 2019)
Row i of every (n, n) map is where token i looks.
"""

from __future__ import annotations

from .ablation import Ablation, HeadImportance, PruningCurve, ablate, head_importance, pruning_curves
from .agreement import agreement, kendall_tau, share, spearman_rho
from .attributions import completeness_gap, input_x_gradient, integrated_gradients, occlusion
from .flow import FLOW_MAX_N_ALL, FLOW_MAX_N_ROW, FlowTooLarge, flow, flow_limit
from .heads import BROAD_ENTROPY, ENTROPY_SMOOTHING, LABEL_SHARE, head_labels, head_stats, sink_shares
from .norms import NormWeights, norm_reconstruction, norm_weights
from .pairs import MinimalPair, find_token, minimal_pair
from .rollout import rollout, rollout_layers

__all__ = [
    "BROAD_ENTROPY",
    "ENTROPY_SMOOTHING",
    "FLOW_MAX_N_ALL",
    "FLOW_MAX_N_ROW",
    "LABEL_SHARE",
    "Ablation",
    "FlowTooLarge",
    "HeadImportance",
    "MinimalPair",
    "NormWeights",
    "PruningCurve",
    "ablate",
    "agreement",
    "completeness_gap",
    "find_token",
    "flow",
    "flow_limit",
    "head_importance",
    "head_labels",
    "head_stats",
    "input_x_gradient",
    "integrated_gradients",
    "kendall_tau",
    "minimal_pair",
    "norm_reconstruction",
    "norm_weights",
    "occlusion",
    "pruning_curves",
    "rollout",
    "rollout_layers",
    "share",
    "sink_shares",
    "spearman_rho",
]
