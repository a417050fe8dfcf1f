"""Sentence pairs through a pretrained encoder: "[CLS] A [SEP] B [SEP]" with segment ids, as BERT
reads a question and its answer or a premise and its hypothesis (`model.attend(a, pair=b)`).

The result's `text` is A and B on two lines, and B's character offsets are shifted past A's, so
spans, readable tokens and character merging keep working; `segments` says which text each token
came from (0 for A, 1 for B, -1 for the specials). Truncation cuts the longer text first.
"""

from __future__ import annotations

import numpy as np
import torch

from ..result import Attention
from .base import Encoded, RunnerBase
from .tokens import build_encoded, clean_text, count_tokens, token_limit, tokenize

PAIR_JOIN = "\n"  # between A and B in the result's `text`


def encode_pair(model: RunnerBase, a: str, b: str, max_tokens: int | None = None) -> Encoded:
    """Tokenise A and B as one input with segment ids; ValueError for an empty text or a model
    that does not read pairs (a decoder, or a tokenizer without a separator token)."""
    tok = model.tokenizer
    if model.causal or getattr(tok, "sep_token", None) is None or not getattr(tok, "is_fast", False):
        raise ValueError(
            f"model '{model.name}' does not read sentence pairs: that needs an encoder whose tokenizer "
            "puts a separator between two texts (BERT, MiniLM, RoBERTa, DistilBERT)"
        )
    if not isinstance(a, str) or not isinstance(b, str):
        raise ValueError("both texts of a pair must be strings")
    a, b = clean_text(a), clean_text(b)
    if not a.strip() or not b.strip():
        raise ValueError("a sentence pair needs two texts: type a sentence in each box")
    limit = token_limit(max_tokens, model.max_tokens)
    enc = tokenize(tok, a, limit, pair=b, return_tensors="pt")  # truncation=True cuts the longer text first
    ids = enc["input_ids"][0].tolist()
    special = np.array(enc.pop("special_tokens_mask")[0].tolist(), dtype=bool)
    seq = enc.sequence_ids(0)
    segments = [-1 if s is None or special[i] else int(s) for i, s in enumerate(seq)]
    if 0 not in segments or 1 not in segments:
        raise ValueError(f"at {limit} tokens no room is left for both texts: allow more tokens")
    shift = len(a) + len(PAIR_JOIN)
    spans = [
        (int(x) + shift, int(y) + shift) if s == 1 else (int(x), int(y))
        for s, (x, y) in zip(seq, enc.pop("offset_mapping")[0].tolist(), strict=True)
    ]
    inputs = {k: v.to(model.device) for k, v in enc.items() if isinstance(v, torch.Tensor)}
    words = enc.word_ids(0)  # B's start again at 0: they continue after A's
    a_words = max((w for w, s in zip(words, segments, strict=True) if s == 0 and w is not None), default=-1) + 1
    word_ids = [
        -1 if w is None or s < 0 else int(w) + (a_words if s == 1 else 0) for w, s in zip(words, segments, strict=True)
    ]
    n_input = count_tokens(tok, a, b)
    text = a + PAIR_JOIN + b
    return build_encoded(tok, inputs, ids, special, text, spans, word_ids, n_input, tuple(segments))


def attend_pair(model: RunnerBase, a: str, b: str, max_tokens: int | None = None) -> Attention:
    """A and B in one forward pass: an `Attention` over "[CLS] A [SEP] B [SEP]" with `segments`."""
    enc = encode_pair(model, a, b, max_tokens)
    return model.attend_encoded(enc, lambda cpu: cpu.attend(a, max_tokens, pair=b))  # type: ignore[call-arg]
