"""attnviz: see what self-attention does, layer by layer and head by head.

import attnviz
model = attnviz.load_model("minilm")            # embedded, works offline
att = model.attend("The animal didn't cross the street because it was tired.")
att.tokens, att.weights.shape                  # list[str], (layers, heads, n, n)
"""

from __future__ import annotations

from .models import (
    DEFAULT_MAX_TOKENS,
    EMBEDDED_MODEL,
    ModelLoadError,
    PretrainedModel,
    Runner,
    ScratchModel,
    load_model,
    resolve_device,
)
from .nextword import predict
from .result import Attention

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "EMBEDDED_MODEL",
    "Attention",
    "ModelLoadError",
    "PretrainedModel",
    "Runner",
    "ScratchModel",
    "__version__",
    "load_model",
    "predict",
    "resolve_device",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # `attnviz.views` and `attnviz.explain` import plotly and more of torch: load them on first use so
    # `import attnviz` stays light for the command line.
    if name in ("views", "explain", "i18n", "corpus", "training"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'attnviz' has no attribute {name!r}")
