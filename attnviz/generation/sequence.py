"""A generated sequence read as the runner reads a text (`RunnerBase.encode`): display tokens
(byte pieces of one character labelled "‹他 1/2›", as models/tokens.readable_tokens labels a
text's), each token's character span in the sequence's text, special tokens and word ids.

The sequence is built from its token ids, never by tokenising its text again: a byte-level
tokenizer need not cut the text it wrote the way it wrote it. A generated token's characters
come from its bytes (a byte-level tokenizer's vocabulary spells them), so a byte piece gets the
span of the character it is part of, as the tokenizer's offsets give a text's pieces."""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np
import torch

from ..models.base import Encoded
from ..models.huggingface import _byte_decoder
from ..models.tokens import build_encoded
from ..nextword import missing_bytes


def sequence_encoding(runner: Any, ids: list[int], prompt: Encoded | None = None) -> Encoded:
    """The `Encoded` of `ids`: the prompt's encoding (its ids begin `ids`) and the tokens after it."""
    tok = runner.tokenizer
    head = [] if prompt is None else prompt.inputs["input_ids"][0].tolist()
    if list(ids[: len(head)]) != head:
        raise ValueError("the sequence does not begin with the prompt's tokens")
    text = "" if prompt is None else prompt.text
    spans = [] if prompt is None else [(int(a), int(b)) for a, b in prompt.spans]
    special = [] if prompt is None else [bool(s) for s in prompt.special]
    new = [int(i) for i in ids[len(head) :]]
    marks = set(int(i) for i in tok.all_special_ids)
    pieces = _pieces(runner, head, new, marks)
    written, new_spans = _text_and_spans(pieces, len(text))
    text += written
    spans += [(0, 0) if i in marks else span for i, span in zip(new, new_spans, strict=True)]
    special += [i in marks for i in new]
    all_ids = head + new
    names = getattr(tok, "model_input_names", ["input_ids", "attention_mask"])
    input_ids = torch.tensor([all_ids], dtype=torch.long, device=runner.device)
    fills = {"attention_mask": torch.ones_like, "token_type_ids": torch.zeros_like}
    inputs = {"input_ids": input_ids, **{k: fill(input_ids) for k, fill in fills.items() if k in names}}
    word_ids = _word_ids(tok, text, spans, special)
    return build_encoded(tok, inputs, all_ids, np.array(special, dtype=bool), text, spans, word_ids, len(all_ids))


def _pieces(runner: Any, head: list[int], new: list[int], marks: set[int]) -> list[tuple[bytes, bytes]]:
    """The UTF-8 bytes each new token adds to the text: (what comes before it and is no part of
    its span, its own); (b"", b"") for a special token."""
    tok = runner.tokenizer
    decoder = getattr(getattr(tok, "backend_tokenizer", None), "decoder", None)
    if type(decoder).__name__ == "ByteLevel":  # GPT-2, Llama 3, Qwen2, SmolLM2: tokens spell bytes
        table = _byte_decoder()
        raw = tok.convert_ids_to_tokens(new)
        return [(b"", b"" if i in marks else bytes(table[c] for c in r)) for i, r in zip(new, raw, strict=True)]
    task = getattr(runner, "task", None)
    if task is not None:  # a training-lab model: one character, or one space-separated word, a token
        sep = b"" if task.char_level else b" "
        names = runner.vocab_strings(new)
        return [(b"", b"") if i in marks else (sep, s.encode("utf-8")) for i, s in zip(new, names, strict=True)]
    out, before = [], tok.decode(head)  # other tokenizers (SentencePiece): what each token adds
    for k in range(len(new)):
        after = tok.decode(head + new[: k + 1])
        added = after[len(before) :] if after.startswith(before) and new[k] not in marks else ""
        out.append((b"", added.encode("utf-8")))
        before = after
    return out


def _chars(data: bytes, *, whole: bool) -> int:
    """Characters in `data`; a character it ends inside of counts when `whole` is False."""
    n = len(data.decode("utf-8", "replace"))  # an unfinished last character decodes to one U+FFFD
    return n - 1 if whole and missing_bytes(data) > 0 else n


def _text_and_spans(pieces: list[tuple[bytes, bytes]], base: int) -> tuple[str, list[tuple[int, int]]]:
    """The text the pieces write and each piece's (start, end) in characters, offset by `base`:
    a piece inside a character spans the whole character."""
    data = b"".join(lead + own for lead, own in pieces)
    spans, at = [], 0
    for lead, own in pieces:
        at += len(lead)
        start = base + _chars(data[:at], whole=True)
        at += len(own)
        spans.append((start, base + _chars(data[:at], whole=False)))
    return data.decode("utf-8", "replace"), spans


def _word_ids(tok: Any, text: str, spans: list[tuple[int, int]], special: list[bool]) -> list[int]:
    """Each token's word: the tokenizer's pre-token its span begins in (-1 for a special
    token), as a text's encoding numbers its words."""
    pre = getattr(getattr(tok, "backend_tokenizer", None), "pre_tokenizer", None)
    if pre is None:
        return [-1 if s else i for i, s in enumerate(special)]
    starts = [a for _, (a, _b) in pre.pre_tokenize_str(text)]
    return [-1 if s else max(0, bisect.bisect_right(starts, a) - 1) for (a, _), s in zip(spans, special, strict=True)]
