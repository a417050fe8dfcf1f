"""Engines behind one seam: `load_model(name)` returns a `Runner` (see base.py).

base.py          the Runner protocol, RunnerBase (tokenising, attend, OOM fallback, steps,
                 layer traces, head switches), Encoded, ModelLoadError
gate.py          how many forward passes run at once, interactive ones first
huggingface.py   Hugging Face models (the only module that knows their module tree)
scratch_runner.py the from-scratch encoder of attnviz/scratch.py
loading.py       load_model, resolve_device, the embedded model, model-name checks
tokens.py        readable tokens and length limits
"""

from __future__ import annotations

from .base import Encoded, HeadMode, ModelLoadError, Runner, RunnerBase, Steps
from .gate import Cancelled, ForwardGate, Progress, gate_for
from .huggingface import PretrainedModel
from .loading import EMBEDDED_MODEL, MODEL_NAME_MAX, check_model_name, embedded_model_dir, load_model, resolve_device
from .scratch_runner import ScratchModel
from .tokens import DEFAULT_MAX_TOKENS, readable_tokens

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "EMBEDDED_MODEL",
    "MODEL_NAME_MAX",
    "Cancelled",
    "Encoded",
    "ForwardGate",
    "HeadMode",
    "ModelLoadError",
    "PretrainedModel",
    "Progress",
    "Runner",
    "RunnerBase",
    "ScratchModel",
    "Steps",
    "check_model_name",
    "embedded_model_dir",
    "gate_for",
    "load_model",
    "readable_tokens",
    "resolve_device",
]
