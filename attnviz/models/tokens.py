"""Tokens as a person reads them, and the length limits of a tokenizer and a model config."""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .. import i18n
from ..result import Attention, char_groups

DEFAULT_MAX_TOKENS = 512

# C0/C1 control characters other than tab and newline, and NUL: tokenizers drop or choke on them.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
Offsets = Sequence[Sequence[int]]  # each token's (start, end) in its text, in characters


@dataclass
class Encoded:
    """A tokenised text, ready for a forward pass (batch of one)."""

    inputs: dict[str, Any]  # torch tensors input_ids, attention_mask, maybe token_type_ids: (1, n)
    tokens: list[str]
    special: np.ndarray
    word_ids: list[int]
    truncated: bool
    n_input_tokens: int
    text: str = ""
    spans: list[tuple[int, int]] = field(default_factory=list)  # each token's character offsets in text
    segments: tuple[int, ...] = ()  # a sentence pair's (pairs.py): 0 A, 1 B, -1 special; () for one text

    def attention(self, weights: np.ndarray, model: str, device: str, causal: bool, kv_heads: Any) -> Attention:
        """The `Attention` of these tokens with `weights` (L, H, n, n): every field but the inputs."""
        shared = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "inputs"}
        return Attention(weights=weights, model=model, device=device, causal=causal, kv_heads=kv_heads, **shared)


def build_encoded(
    tokenizer: Any,
    inputs: dict[str, Any],
    ids: list[int],
    special: np.ndarray,
    text: str,
    offsets: Offsets,
    word_ids: list[int],
    n_input: int,
    segments: tuple[int, ...] = (),
) -> Encoded:
    """The `Encoded` of `ids`, cut from `n_input` tokens of `text`: readable tokens and spans from
    each token's character `offsets`."""
    return Encoded(
        inputs=inputs,
        tokens=readable_tokens(tokenizer, ids, special, text, offsets),
        special=special,
        word_ids=word_ids,
        truncated=n_input > len(ids),
        n_input_tokens=max(n_input, len(ids)),
        text=text,
        spans=token_spans(tokenizer, ids, text, offsets),
        segments=segments,
    )


def encoded(tokenizer: Any, text: object, limit: int) -> tuple[Any, Encoded]:
    """`text` checked (`checked_text`) and cut to `limit` tokens: the backend's encoding
    (`encode_counted`) and its `Encoded`, whose `inputs` the caller fills (torch or numpy)."""
    text = checked_text(text)
    enc, n_input = encode_counted(tokenizer, text, limit)  # one tokenization: the cut and the count
    ids, special = list(enc.ids), np.array(enc.special_tokens_mask, dtype=bool)
    if len(ids) == int(special.sum()):  # special tokens only: nothing the model knows
        raise TextRefused("no_tokens")
    word_ids = [-1 if w is None else int(w) for w in enc.word_ids]
    return enc, build_encoded(tokenizer, {}, ids, special, text, enc.offsets, word_ids, n_input)


def token_limit(asked: int | None, limit: int) -> int:
    """The token limit a request gets: `asked` (None: `limit`, the model's or the deployment's),
    at most `limit` and at least 2 (a text needs room beside [CLS] and [SEP])."""
    return max(2, min(int(limit if asked is None else asked), int(limit)))


def clean_text(text: str) -> str:
    return _CONTROL.sub(" ", text)


class TextRefused(ValueError):
    """A text that cannot be analysed. `reason` names why ("not_text", "empty", "too_long",
    "no_tokens"): the catalogues' `err.<reason>` says it in each language, filled with `values`
    (`n` and `limit` for "too_long"); str() is the English entry, for the command lines."""

    def __init__(self, reason: str, **values: str) -> None:
        super().__init__(reason)
        self.reason, self.values = reason, values

    @property
    def key(self) -> str:
        return f"err.{self.reason}"

    def __str__(self) -> str:
        return i18n.t(self.key, "en", **self.values)


def check_text(text: object, max_chars: int | None = None) -> str:
    """`text` itself if it can be analysed; TextRefused, before any tokenising, if not."""
    if not isinstance(text, str):
        raise TextRefused("not_text")
    if not clean_text(text).strip():
        raise TextRefused("empty")
    if max_chars is not None and len(text) > max_chars:
        raise TextRefused("too_long", n=f"{len(text):,}", limit=f"{max_chars:,}")
    return text


def checked_text(text: object) -> str:
    """A text to encode, cleaned (`clean_text`) once `check_text` accepts it."""
    return clean_text(check_text(text))


# A fast tokenizer keeps truncation and padding as state on its Rust backend: each transformers
# __call__ sets them (`set_truncation_and_padding`), then encodes. Two threads calling one
# tokenizer at once, one counting a whole text and one cutting it, could hand the cut one the
# whole text. So every call in the package holds its backend's lock (`tokenize`, `count_tokens`,
# `encode_counted`), and the runners' encode calls the backend with the call's own limit under
# it: cheaper than a copy per thread (e5-small's backend is about 230 MB; bench/README.md).
_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


@contextmanager
def tokenizer_lock(tokenizer: Any) -> Iterator[None]:
    """Hold the lock of the object whose truncation and padding a call of `tokenizer` sets: its
    Rust backend (`backend_tokenizer`; shared by every wrapper of it), else the tokenizer itself.
    Reentrant: a tokenizer that hands a call on to another (the quick MiniLM's) holds both."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    owner = tokenizer if backend is None else backend
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(owner, threading.RLock())
    with lock:
        yield


def tokenize(
    tokenizer: Any, texts: str | list[str], limit: int | None, *, pair: str | None = None, **extra: Any
) -> Any:
    """The tokenizer's encoding of one text or many (or of the pair `texts`, `pair`), cut to
    `limit` tokens (None: the whole text), with the special tokens marked and (fast tokenizers)
    character offsets, for readable tokens and word ids. Under the tokenizer's lock."""
    args = (texts,) if pair is None else (texts, pair)
    with tokenizer_lock(tokenizer):
        return tokenizer(
            *args,
            truncation=limit is not None,
            max_length=limit,
            return_special_tokens_mask=True,
            return_offsets_mapping=bool(getattr(tokenizer, "is_fast", False)),
            **extra,
        )


def encode_counted(tokenizer: Any, text: str, limit: int | None) -> tuple[Any, int]:
    """`text`'s encoding cut to `limit` tokens (None: whole), a `tokenizers.Encoding` (ids, type
    ids, attention mask, special-token mask, offsets, word ids, as transformers' call gives them),
    and the whole text's token count, specials included. The backend is called as transformers
    calls it, under its lock: the whole text once, and a text longer than `limit` once more with
    the backend's own truncation (a cut by hand would post-process twice: RoBERTa's and the
    byte-level processors move offsets each time)."""
    backend = tokenizer.backend_tokenizer
    split = bool(getattr(tokenizer, "split_special_tokens", False))
    with tokenizer_lock(tokenizer):
        if backend.padding is not None:
            backend.no_padding()
        if backend.encode_special_tokens != split:
            backend.encode_special_tokens = split
        if backend.truncation is not None:
            backend.no_truncation()
        enc = backend.encode(text)
        n = len(enc.ids)
        if limit is not None and n > limit:
            side = getattr(tokenizer, "truncation_side", "right")
            backend.enable_truncation(limit, stride=0, strategy="longest_first", direction=side)
            enc = backend.encode(text)
        return enc, n


def model_inputs(tokenizer: Any, enc: Any) -> dict[str, list[int]]:
    """The inputs a model takes of an encoding, as transformers' call returns them by default:
    the ids, and the token types and attention mask where the tokenizer's model takes them."""
    every = {"input_ids": enc.ids, "token_type_ids": enc.type_ids, "attention_mask": enc.attention_mask}
    return {k: v for k, v in every.items() if k == "input_ids" or k in tokenizer.model_input_names}


def count_tokens(tokenizer: Any, text: str, pair: str | None = None) -> int:
    """Tokens of the whole text (or pair), specials included, without the long-input warning."""
    args = (text,) if pair is None else (text, pair)
    with tokenizer_lock(tokenizer):
        ids = tokenizer(*args, truncation=False, verbose=False, return_attention_mask=False)["input_ids"]
    return len(ids)


def model_limit(tokenizer: Any, cfg: Any) -> int:
    """The most tokens the model takes: the tokenizer's limit and the position table's."""
    tl = getattr(tokenizer, "model_max_length", None)
    limits = [tl] if isinstance(tl, int) and 0 < tl < 1_000_000 else []
    sizes = (getattr(cfg, a, None) for a in ("max_position_embeddings", "n_positions"))
    v = next((size for size in sizes if isinstance(size, int) and size > 0), 0)
    if v > 0:  # RoBERTa reserves padding_idx + 1 positions
        roberta = getattr(cfg, "model_type", "") in ("roberta", "xlm-roberta", "camembert")
        limits.append(v - (getattr(cfg, "pad_token_id", 0) or 0) - 1 if roberta else v)
    return min(limits) if limits else DEFAULT_MAX_TOKENS


def token_spans(tokenizer: Any, ids: list[int], text: str, offsets: Offsets) -> list[tuple[int, int]]:
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


def readable_tokens(tokenizer: Any, ids: list[int], special: np.ndarray, text: str, offsets: Offsets) -> list[str]:
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
        start, end = offsets[i]
        if tok == getattr(tokenizer, "unk_token", None):
            s = f"{tok}:{text[start:end].strip()}" if end > start else tok  # show what was unknown
        elif tok.startswith("##"):
            s = tok[2:]
        else:
            s = tokenizer.convert_tokens_to_string([tok]).strip()
        # a piece of a multi-byte character shows its span of the text; a bare word-start marker
        # (SentencePiece's "▁" before a CJK character) stays a space, not the character after it
        if "\ufffd" in s or (not s and tok.strip(_MARKERS)):
            s = text[start:end].strip()
        out.append(s or "\u2423")  # a token that is only whitespace shows as the open box
    for group in char_groups(token_spans(tokenizer, ids, text, offsets), special):
        whole = out[group[-1]]
        for k, i in enumerate(group[:-1], start=1):
            out[i] = f"\u2039{whole} {k}/{len(group)}\u203a"
    return out


_MARKERS = "\u2581\u0120 "  # SentencePiece's and GPT-2's word-start markers, and a space
