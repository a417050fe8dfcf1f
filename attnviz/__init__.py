"""attnviz: see what self-attention does, layer by layer and head by head.

import attnviz
model = attnviz.load_model("minilm")            # embedded, works offline
att = model.attend("The animal didn't cross the street because it was tired.")
att.tokens, att.weights.shape                  # list[str], (layers, heads, n, n)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .models.names import EMBEDDED_MODEL
from .models.tokens import DEFAULT_MAX_TOKENS
from .result import Attention

if TYPE_CHECKING:
    from .explain.removal import embed
    from .generation import generate
    from .long import LongAttention, attend_long
    from .models import ModelLoadError, PretrainedModel, Runner, ScratchModel, load_model, resolve_device
    from .nextword import predict

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "EMBEDDED_MODEL",
    "Attention",
    "LongAttention",
    "ModelLoadError",
    "PretrainedModel",
    "Runner",
    "ScratchModel",
    "__version__",
    "attend_long",
    "embed",
    "generate",
    "load_model",
    "predict",
    "resolve_device",
]

__version__ = "0.1.0"


# name -> module that defines it. Everything that imports torch (the models) or plotly and more of
# torch loads on first use: `import attnviz`, `attnviz.config` and `attnviz.views` stay light
# (tests/test_imports.py), and the command line starts fast.
_LAZY = {
    **dict.fromkeys(
        ("ModelLoadError", "PretrainedModel", "Runner", "ScratchModel", "load_model", "resolve_device"), ".models"
    ),
    "embed": ".explain.removal",
    "predict": ".nextword",
    "generate": ".generation",  # a causal model writing token by token
    **dict.fromkeys(("attend_long", "LongAttention"), ".long"),  # attention at any length
}
_SUBPACKAGES = ("views", "explain", "i18n", "corpus", "training", "lab", "generation")


def __getattr__(name: str) -> object:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value  # once: later lookups skip this function
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'attnviz' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
