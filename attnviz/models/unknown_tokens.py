"""Unknown tokens: how much of a text a model cannot read, and which offered model reads it.
Every character without a piece becomes one shared unknown token, so a map over such tokens shows
positions, not meaning (MiniLM knows about 240 CJK characters; multilingual-e5-small reads Chinese).
Tokenizers only, no model runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .tokens import tokenize

MAX_UNKNOWN_SHARE = 0.05  # above this share a model is not reading the text (the examples stay under it)


@dataclass(frozen=True)
class Unknown:
    """The unknown tokens of a text: how many of its ordinary (non-special) tokens, and the
    distinct characters they stand for, in order of appearance."""

    unknown: int
    ordinary: int
    characters: tuple[str, ...] = ()

    @property
    def share(self) -> float:
        return self.unknown / self.ordinary if self.ordinary else 0.0


def unknown_tokens(tokenizer: Any, text: str, max_tokens: int | None = None) -> Unknown:
    """Count `text`'s unknown tokens under `tokenizer` (cut to `max_tokens` as a runner cuts)."""
    unk = getattr(tokenizer, "unk_token_id", None)
    enc = tokenize(tokenizer, text, max_tokens, verbose=False)
    ids, special = enc["input_ids"], enc["special_tokens_mask"]
    offsets = enc.get("offset_mapping", [(0, 0)] * len(ids))  # a slow tokenizer gives none
    ordinary = [(i, span) for i, span, s in zip(ids, offsets, special, strict=True) if not s]
    hits = [text[a:b].strip() for i, (a, b) in ordinary if unk is not None and i == unk]
    return Unknown(len(hits), len(ordinary), tuple(dict.fromkeys(h for h in hits if h)))


def model_for_language(language: str, options: list[str]) -> str:
    """The model an interface language starts with: the one its example sentences are offered
    with (attnviz/locales/examples.json: e5-small for Chinese), when it is among `options`;
    else the first option."""
    from .. import i18n

    wanted = i18n.examples(language).get("model")
    return wanted if wanted in options else options[0]


@lru_cache(maxsize=4)
def tokenizer_of(name: str) -> Any | None:
    """The tokenizer of a built-in model, without loading its weights; None for any other
    name (a Hugging Face id or a folder would have to be fetched or read to know)."""
    from .e5 import E5_MODEL, e5_tokenizer
    from .loading import EMBEDDED_MODEL, _hf_tokenizer

    if name == E5_MODEL:
        return e5_tokenizer()
    return _hf_tokenizer() if name in (EMBEDDED_MODEL, "scratch") else None


def reader_for(text: str, offered: Iterable[str], current: str, max_tokens: int | None = None) -> str | None:
    """The first offered built-in model, other than `current`, that reads `text` (at most
    MAX_UNKNOWN_SHARE of its tokens unknown); None when there is none."""
    for name in offered:
        if name == current:
            continue
        tok = tokenizer_of(name)
        if tok is not None and unknown_tokens(tok, text, max_tokens).share <= MAX_UNKNOWN_SHARE:
            return name
    return None
