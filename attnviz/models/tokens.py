"""Tokens as a person reads them, and the length limits of a tokenizer and a model config."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "clean_text",
    "count_tokens",
    "model_limit",
    "readable_tokens",
    "token_limit",
    "tokenize",
]

DEFAULT_MAX_TOKENS = 512

# C0/C1 control characters other than tab and newline, and NUL: tokenizers drop or choke on them.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def token_limit(asked: int | None, limit: int) -> int:
    """The token limit a request gets: what it asked for, at most `limit` (the model's, or the
    deployment's) and at least 2 (a text needs room beside [CLS] and [SEP]); `limit` when it asked
    for none. The one place the clamp is written."""
    return max(2, min(int(limit if asked is None else asked), int(limit)))


def clean_text(text: str) -> str:
    return _CONTROL.sub(" ", text)


def checked_text(text: object) -> str:
    """A text to encode, cleaned (`clean_text`); a non-string or blank one is refused with the
    message the app shows. Every runner's `encode` (and the numpy first answer) checks here."""
    if not isinstance(text, str):
        raise ValueError("text must be a string")
    text = clean_text(text)
    if not text.strip():
        raise ValueError("text is empty: type a sentence to analyse")
    return text


def require_known(ids: list[int], special: np.ndarray) -> None:
    """Refuse an encoding of special tokens only (nothing the model knows)."""
    if len(ids) == int(special.sum()):
        raise ValueError("the text has no tokens the model knows: type some words")


def tokenize(tokenizer: Any, texts: str | list[str], limit: int, **extra: Any) -> Any:
    """The tokenizer's encoding of one text or many, cut to `limit` tokens, with the special
    tokens marked and (fast tokenizers) character offsets, for readable tokens and word ids."""
    return tokenizer(
        texts,
        truncation=True,
        max_length=limit,
        return_special_tokens_mask=True,
        return_offsets_mapping=bool(getattr(tokenizer, "is_fast", False)),
        **extra,
    )


def count_tokens(tokenizer: Any, text: str) -> int:
    """Tokens of the whole text, specials included, without the long-input warning."""
    ids = tokenizer(text, truncation=False, verbose=False, return_attention_mask=False)["input_ids"]
    return len(ids)


def model_limit(tokenizer: Any, cfg: Any) -> int:
    """The most tokens the model takes: the tokenizer's limit and the position table's."""
    limits = []
    tl = getattr(tokenizer, "model_max_length", None)
    if isinstance(tl, int) and 0 < tl < 1_000_000:
        limits.append(tl)
    for attr in ("max_position_embeddings", "n_positions"):
        v = getattr(cfg, attr, None)
        if isinstance(v, int) and v > 0:
            # RoBERTa reserves padding_idx + 1 positions
            roberta = getattr(cfg, "model_type", "") in ("roberta", "xlm-roberta", "camembert")
            limits.append(v - (getattr(cfg, "pad_token_id", 0) or 0) - 1 if roberta else v)
            break
    return min(limits) if limits else DEFAULT_MAX_TOKENS


def readable_tokens(
    tokenizer: Any, ids: list[int], special: np.ndarray, text: str, offsets: list[list[int]] | None
) -> list[str]:
    """Display strings: specials as they are; word pieces without "##", "Ġ" or "▁" markers.
    A piece that is part of a multi-byte character falls back to its span of the text."""
    raw = tokenizer.convert_ids_to_tokens(ids)
    out = []
    for i, (tok, is_special) in enumerate(zip(raw, special, strict=True)):
        if is_special:
            out.append(tok)
            continue
        if tok == getattr(tokenizer, "unk_token", None) and offsets is not None:
            start, end = offsets[i]
            s = f"{tok}:{text[start:end].strip()}" if end > start else tok  # show what was unknown
        elif tok.startswith("##"):
            s = tok[2:]
        else:
            s = tokenizer.convert_tokens_to_string([tok]).strip()
        # a piece of a multi-byte character shows its span of the text; a bare word-start marker
        # (SentencePiece's "▁" before a CJK character) stays a space, not the character after it
        if ("\ufffd" in s or (not s and tok.strip("\u2581\u0120 "))) and offsets is not None:
            start, end = offsets[i]
            s = text[start:end].strip()
        out.append(s or "\u2423")  # a token that is only whitespace shows as the open box
    return out
