"""The next word of a causal language model: `predict(model, text, k)`, and `next_tokens`,
which also says what a byte piece among the candidates begins to write.

A byte-level tokenizer (GPT-2, SmolLM2) writes 他 as byte pieces; a candidate such as
<0xE4><0xBB> is no text on its own. `next_tokens` lets the model write its likeliest continuation
bytes until the character is complete (at most three more: UTF-8 has at most four bytes)."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the views read NextToken and piece_bytes without importing torch
    from .models import Runner

__all__ = ["NextToken", "missing_bytes", "next_tokens", "piece_bytes", "predict", "top_k"]

LOOK = 32  # continuation candidates read at each step: the likeliest that fits is taken
_BYTES = re.compile(r"(?:<0x[0-9A-F]{2}>)+")  # how vocab_strings writes a byte piece


def top_k(logits: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, probabilities) of the k largest softmax entries of each row, best first."""
    if k < 1:
        raise ValueError("k must be at least 1")
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=-1, keepdims=True)
    k = min(int(k), p.shape[-1])
    part = np.argpartition(-p, k - 1, axis=-1)[..., :k]
    order = np.argsort(-np.take_along_axis(p, part, axis=-1), axis=-1, kind="stable")
    ids = np.take_along_axis(part, order, axis=-1)
    return ids, np.take_along_axis(p, ids, axis=-1)


def predict(model: Runner, text: str, k: int = 10, max_tokens: int | None = None) -> list[tuple[str, float]]:
    """The k likeliest tokens after `text`, best first, as (token, probability) pairs; a byte
    piece reads as its bytes ("<0xE4><0xBB>"). ValueError for a model without a language-model
    head (an encoder)."""
    ids, probs = top_k(model.next_token_logits(text, max_tokens), k)
    return list(zip(model.vocab_strings([int(i) for i in ids]), (float(p) for p in probs), strict=True))


@dataclass(frozen=True)
class NextToken:
    """One candidate for the next token.

    token:       the vocabulary entry as `predict` names it (a byte piece as "<0xE4><0xBB>").
    probability: its softmax probability.
    text:        what it writes. For a byte piece: the text its bytes begin, completed by the
                 model's own likeliest continuation ("他"), or "" when none completes it.
    piece:       True when the token's bytes are no text on their own.
    own_bytes, text_bytes: for a piece, its bytes and those of `text` (0 otherwise).
    """

    token: str
    probability: float
    text: str
    piece: bool = False
    own_bytes: int = 0
    text_bytes: int = 0


def piece_bytes(token: str) -> bytes | None:
    """The bytes of a vocabulary string written as bytes ("<0xE4><0xBB>"); None for text."""
    if not _BYTES.fullmatch(token):
        return None
    return bytes(int(h, 16) for h in re.findall(r"<0x([0-9A-F]{2})>", token))


def missing_bytes(data: bytes) -> int:
    """Bytes still needed to end the last character of `data` (0: it ends on a character);
    -1 when `data` is not the beginning of UTF-8 text (it starts inside a character)."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        decoder.decode(data, final=False)
    except UnicodeDecodeError:
        return -1
    pending = decoder.getstate()[0]
    if not pending:
        return 0
    size = 2 if pending[0] < 0xE0 else 3 if pending[0] < 0xF0 else 4  # the lead byte says the length
    return size - len(pending)


def next_tokens(model: Runner, text: str, k: int = 10, max_tokens: int | None = None) -> list[NextToken]:
    """`predict`'s k candidates, each with the text it writes (`NextToken`): a byte piece that
    begins a character is completed by the model's likeliest continuation pieces."""
    ids, probs = top_k(model.next_token_logits(text, max_tokens), k)
    cands = [int(i) for i in ids]
    names = model.vocab_strings(cands)
    starts = [piece_bytes(s) for s in names]
    open_ = {i: data for i, data in enumerate(starts) if data is not None and missing_bytes(data) > 0}
    done = _complete(model, text, {i: (cands[i], data) for i, data in open_.items()}, max_tokens) if open_ else {}
    out = []
    for i, (name, p, data) in enumerate(zip(names, probs.tolist(), starts, strict=True)):
        if data is None:
            out.append(NextToken(name, float(p), name))
            continue
        full = done.get(i, data if missing_bytes(data) == 0 else b"")
        out.append(NextToken(name, float(p), full.decode("utf-8") if full else "", True, len(data), len(full)))
    return out


def _complete(
    model: Runner, text: str, starts: dict[int, tuple[int, bytes]], max_tokens: int | None
) -> dict[int, bytes]:
    """For each piece (by its place among the candidates: its id and bytes): its bytes and the
    continuation bytes that end its last character, the likeliest the model writes after it at
    each step (greedy); left out when none of the `LOOK` likeliest continues it, or the runner
    keeps no cache. The pieces take turns over the text's one KV cache (cut back after each), not
    a copy each: a decoder's cache is tens of MB at a few hundred tokens."""
    import torch

    from .models.threads import cpu_threads_for

    hf = getattr(model, "hf_model", None)
    if hf is None:
        return {}
    done: dict[int, bytes] = {}
    enc = model.encode(text, max_tokens)
    n = int(enc.inputs["input_ids"].shape[1])
    with model.gate.interactive(), torch.inference_mode():
        with cpu_threads_for(n, model.device):
            cache = hf(**enc.inputs, use_cache=True, return_dict=True).cache
        for i, (step, data) in starts.items():
            for _ in range(3):  # a UTF-8 character has at most 4 bytes: 3 more pieces at most
                inputs = torch.tensor([[step]], device=model.device)
                mask = torch.ones((1, cache.get_seq_length() + 1), dtype=torch.long, device=model.device)
                with cpu_threads_for(1, model.device):  # one new token: one thread (models/threads.py)
                    out = hf(input_ids=inputs, attention_mask=mask, cache=cache, use_cache=True, return_dict=True)
                logits = model.unembed(out.last_hidden_state[0, -1]).float().cpu().numpy()
                step, more = _continuation(model, logits, missing_bytes(data))
                data += more
                if not more or missing_bytes(data) == 0:
                    break
            if more and missing_bytes(data) == 0:
                done[i] = data
            cache.crop(n - cache.get_seq_length())  # transformers 5: minus the tokens to drop
    return done


def _continuation(model: Runner, logits: np.ndarray, need: int) -> tuple[int, bytes]:
    """The likeliest of the `LOOK` best tokens that continues a character needing `need` more
    bytes, and the bytes it adds; (0, b"") when none does."""
    best = np.argsort(-logits)[:LOOK].tolist()
    for cand, name in zip(best, model.vocab_strings(best), strict=True):
        more = piece_bytes(name)
        more = (name.encode("utf-8") if more is None else more)[:need]
        if more and all(0x80 <= b < 0xC0 for b in more):  # UTF-8 continuation bytes only
            return int(cand), more
    return 0, b""
