"""Engines behind one seam: `load_model(name)` returns a `Runner` (see base.py).

Only names.py and tokens.py are imported with the package; every other name on first use (module
`__getattr__`), so the settings, the views and the app's urls do not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .names import EMBEDDED_MODEL, MODEL_NAME_MAX, check_model_name
from .tokens import DEFAULT_MAX_TOKENS, readable_tokens

if TYPE_CHECKING:
    from .base import Encoded, HeadMode, Runner, RunnerBase, Steps
    from .errors import ModelLoadError
    from .gate import Cancelled, ForwardGate, Progress, gate_for
    from .huggingface import PretrainedModel
    from .loading import load_model, resolve_device
    from .minilm_numpy import embedded_model_dir
    from .scratch_runner import ScratchModel

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

# name -> submodule that defines it, imported on first use
_LAZY = {
    **dict.fromkeys(("Encoded", "HeadMode", "Runner", "RunnerBase", "Steps"), "base"),
    "ModelLoadError": "errors",
    **dict.fromkeys(("Cancelled", "ForwardGate", "Progress", "gate_for"), "gate"),
    "PretrainedModel": "huggingface",
    "embedded_model_dir": "minilm_numpy",
    **dict.fromkeys(("load_model", "resolve_device"), "loading"),
    "ScratchModel": "scratch_runner",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # once: later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
