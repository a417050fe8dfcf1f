"""Kept for code written against the first build (`from attnviz.pretrained import ...`); the
runners now live in `attnviz.models`."""

from __future__ import annotations

from .models import (
    DEFAULT_MAX_TOKENS,
    EMBEDDED_MODEL,
    Encoded,
    ModelLoadError,
    PretrainedModel,
    Runner,
    ScratchModel,
    embedded_model_dir,
    load_model,
    readable_tokens,
    resolve_device,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "EMBEDDED_MODEL",
    "Encoded",
    "ModelLoadError",
    "PretrainedModel",
    "Runner",
    "ScratchModel",
    "embedded_model_dir",
    "load_model",
    "readable_tokens",
    "resolve_device",
]
