"""Tokens as a person reads them, and the length limits of a tokenizer and a model config."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..result import char_groups

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "clean_text",
    "count_tokens",
    "model_limit",
    "readable_tokens",
    "token_limit",
    "token_spans",
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


def token_spans(tokenizer: Any, ids: list[int], text: str, offsets: list[list[int]]) -> list[tuple[int, int]]:
    """Each token's (start, end) in `text`. A bare word-start marker (the "▁" SentencePiece puts
    before 动物 in XLM-R and multilingual-e5) covers no character of the text, so it gets an empty
    span (start, start): the tokenizer gives it the offsets of the character after it, which would
    read as two tokens cut from one character (a byte merge that never happened)."""
    raw = tokenizer.convert_ids_to_tokens(ids)
    spans = []
    for tok, (start, end) in zip(raw, offsets, strict=True):
        start, end = int(start), int(end)
        if isinstance(tok, str) and tok and not tok.strip(_MARKERS) and text[start:end].strip():
            end = start
        spans.append((start, end))
    return spans


def readable_tokens(
    tokenizer: Any, ids: list[int], special: np.ndarray, text: str, offsets: list[list[int]] | None
) -> list[str]:
    """Display strings: specials as they are; word pieces without "##", "Ġ" or "▁" markers.

    A byte-level tokenizer (GPT-2, Llama 3, SmolLM2) may cut one character into byte pieces that
    are no text on their own. The piece that completes the character shows it ("灯"); the pieces
    before it show the character and their place among its k pieces, "‹灯 1/3›", "‹灯 2/3›", so
    no two pieces read the same. (Pieces whose bytes run over two characters show both: "‹我爱 1/2›",
    "我爱".) `Attention.merge_characters` makes one token of them."""
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
        if ("\ufffd" in s or (not s and tok.strip(_MARKERS))) and offsets is not None:
            start, end = offsets[i]
            s = text[start:end].strip()
        out.append(s or "\u2423")  # a token that is only whitespace shows as the open box
    if offsets is not None:
        for group in char_groups(token_spans(tokenizer, ids, text, offsets), special):
            whole = out[group[-1]]
            for k, i in enumerate(group[:-1], start=1):
                out[i] = f"\u2039{whole} {k}/{len(group)}\u203a"
    return out


_MARKERS = "\u2581\u0120 "  # SentencePiece's and GPT-2's word-start markers, and a space
