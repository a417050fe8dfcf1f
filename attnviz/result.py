"""The `Attention` result: tokens plus a float32 (layers, heads, n, n) array, and numpy helpers.

Everything after the model forward is numpy, so an `Attention` is cheap to cache and to test.
Row i of every (n, n) map is where token i looks; rows sum to 1. A cross-attention result has
`key_tokens` of its own: (layers, heads, n_q, n_k), queries from one text, keys from another.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import groupby

import numpy as np

OOM_CPU = "oom_cpu"  # Note.key: the accelerator ran out of memory and the CPU computed the result


class Note(str):
    """A notice on a result: readable English (a `str`, so the CLI and the exports print it as
    it is) and `key`, an identifier an app matches and translates (`OOM_CPU`); "" for none.
    A note read back from JSON is the text alone."""

    key: str

    def __new__(cls, text: str, key: str = "") -> Note:
        note = super().__new__(cls, text)
        note.key = key
        return note


def note_key(note: str) -> str:
    """The identifier of a note ("" for a plain string)."""
    return getattr(note, "key", "")


@dataclass(frozen=True, eq=False)
class Attention:
    """Attention weights of one text through one model.

    tokens:   display tokens, special tokens included, word pieces readable ("##" / "Ġ" removed).
              A byte-level tokenizer (SmolLM2) cuts 灯 into byte pieces: the piece that completes
              the character reads "灯", the others "‹灯 1/3›", "‹灯 2/3›" (models/tokens.py);
              `merge_characters` makes one token of them.
    weights:  float32 array (layers, heads, n, n); weights[l, h, i, j] = how much token i
              attends to token j in layer l, head h.
    special:  bool array (n,), True for [CLS], [SEP], <s>, </s> and similar.
    word_ids: for each token the index of the word it belongs to, or -1 for special tokens.
    n_input_tokens: tokens the full text would have had before truncation (specials included).
    notes:    notices for the viewer; each a `Note` when it comes from attnviz.
    causal:   True for a decoder (token i sees tokens 0..i only).
    kv_heads: int array (heads,): the key/value head each query head reads (grouped-query
              attention shares one among several query heads), or None when not known.
    spans:    each token's character offsets (start, end) in `text` (empty when not known).
    key_tokens: cross-attention's keys when they are not `tokens`: weights (layers, heads, n_q, n_k).
    segments: a sentence pair's ("[CLS] A [SEP] B [SEP]") text of each token: 0 A, 1 B, -1 special.
    """

    tokens: list[str]
    weights: np.ndarray
    model: str
    device: str = "cpu"
    truncated: bool = False
    special: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    word_ids: list[int] = field(default_factory=list)
    text: str = ""
    causal: bool = False
    n_input_tokens: int = 0
    notes: tuple[str, ...] = ()
    kv_heads: np.ndarray | None = None
    spans: list[tuple[int, int]] = field(default_factory=list)
    key_tokens: tuple[str, ...] = ()
    segments: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        w = np.asarray(self.weights, dtype=np.float32)
        object.__setattr__(self, "key_tokens", tuple(self.key_tokens))
        if self.key_tokens:
            if w.ndim != 4 or w.shape[3] != len(self.key_tokens):
                raise ValueError(
                    f"weights must have shape (layers, heads, n_q, {len(self.key_tokens)}) "
                    f"for {len(self.key_tokens)} key tokens, got {w.shape}"
                )
        elif w.ndim != 4 or w.shape[2] != w.shape[3]:
            raise ValueError(f"weights must have shape (layers, heads, n, n), got {w.shape}")
        n = w.shape[2]
        if len(self.tokens) != n:
            raise ValueError(f"{len(self.tokens)} tokens for attention maps of size {n}")
        object.__setattr__(self, "weights", w)
        special = np.asarray(self.special, dtype=bool)
        if special.size == 0:
            special = np.zeros(n, dtype=bool)
        object.__setattr__(self, "special", special)
        if not self.word_ids:  # each ordinary token a word of its own, counted from 0
            words = np.cumsum(~special) - 1
            object.__setattr__(self, "word_ids", [-1 if s else int(w) for s, w in zip(special, words, strict=True)])
        if self.kv_heads is not None:
            kv = np.asarray(self.kv_heads, dtype=np.int64)
            if kv.shape != (w.shape[1],):
                raise ValueError(f"kv_heads must have shape ({w.shape[1]},), got {kv.shape}")
            object.__setattr__(self, "kv_heads", kv)
        if not self.n_input_tokens:
            object.__setattr__(self, "n_input_tokens", n)
        object.__setattr__(self, "segments", tuple(int(s) for s in self.segments))
        if self.segments and len(self.segments) != n:
            raise ValueError(f"{len(self.segments)} segment ids for {n} tokens")

    @property
    def n_layers(self) -> int:
        return int(self.weights.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.weights.shape[1])

    @property
    def n(self) -> int:
        """Query tokens (rows); equal to `n_keys` unless the result is `cross`."""
        return int(self.weights.shape[-2])

    @property
    def n_keys(self) -> int:
        """Key tokens (columns)."""
        return int(self.weights.shape[-1])

    @property
    def cross(self) -> bool:
        """True when the rows attend over other tokens than their own (`key_tokens` given)."""
        return bool(self.key_tokens)

    @property
    def keys(self) -> list[str]:
        """The tokens of the columns: `key_tokens`, or `tokens` for self-attention."""
        return list(self.key_tokens) if self.key_tokens else list(self.tokens)

    def require_square(self, what: str) -> None:
        """ValueError naming `what` when this is a cross-attention result: a view or method that
        reads rows and columns as the same tokens (a token's own weight, rollout through the
        layers, word merging on both axes) has no meaning for queries from one text over another."""
        if self.key_tokens:
            raise ValueError(
                f"{what} needs self-attention (every token attending over the same tokens); this is "
                f"cross-attention, {self.n} query tokens over {self.n_keys} other key tokens"
            )

    def head(self, layer: int, head: int | None = None) -> np.ndarray:
        """The (n_q, n_k) map of one head, or the mean over heads when `head` is None."""
        if not 0 <= layer < self.n_layers:
            raise IndexError(f"layer {layer} out of range 0..{self.n_layers - 1}")
        if head is None:
            return self.weights[layer].mean(axis=0)
        if not 0 <= head < self.n_heads:
            raise IndexError(f"head {head} out of range 0..{self.n_heads - 1}")
        return self.weights[layer, head]

    def without_special(self) -> Attention:
        """Drop special tokens' rows and columns and renormalise each row to sum to 1.

        What remains is "where token i looks among the ordinary tokens"; the mass that went
        to [CLS]/[SEP] is redistributed proportionally (the caveats page says so).
        """
        keep = ~self.special
        if keep.all() or not keep.any():
            return self
        self.require_square("dropping special tokens")
        idx = np.flatnonzero(keep).tolist()
        w = self.weights[:, :, idx][:, :, :, idx]
        w = w / np.maximum(w.sum(-1, keepdims=True), np.finfo(np.float32).tiny)
        return self._merged([[i] for i in idx], [self.tokens[i] for i in idx], w.astype(np.float32))

    def merge_words(self) -> Attention:
        """Merge word pieces into words: attention *to* a word is summed over its pieces,
        attention *from* a word is averaged over its pieces (Clark et al. 2019), so rows
        still sum to 1."""
        groups = word_groups(self.word_ids)
        if len(groups) == self.n:
            return self
        self.require_square("merging word pieces")
        return self._merged(groups, [self._word_text(g) for g in groups], merge_word_matrix(self.weights, groups))

    def merge_characters(self) -> Attention:
        """Merge the tokens that share a character into one, by their offsets: a byte-level
        tokenizer (GPT-2, Llama, SmolLM2) cuts 我 or an emoji into byte pieces that are no text
        on their own. Weights merge as `merge_words` merges word pieces (columns summed over a
        character's pieces, rows averaged: rows still sum to 1); each merged token shows its
        span of the text, and the merged spans, joined, give the text back."""
        groups = self.character_groups()
        if len(groups) == self.n:
            return self
        self.require_square("merging characters")
        return self._merged(groups, self.character_tokens(groups), merge_word_matrix(self.weights, groups))

    def _merged(self, groups: list[list[int]], tokens: list[str], weights: np.ndarray) -> Attention:
        """One token a group (without_special: each ordinary token alone), named `tokens`, with
        `weights`; each group takes its first token's flags and its tokens' span."""
        return replace(
            self,
            tokens=tokens,
            weights=weights,
            special=np.array([bool(self.special[g[0]]) for g in groups]),
            word_ids=[self.word_ids[g[0]] for g in groups],
            spans=self._group_spans(groups),
            segments=tuple(self.segments[g[0]] for g in groups) if self.segments else (),
        )

    def character_groups(self) -> list[list[int]]:
        """The token indices of each character (the byte pieces of one character together, in
        order); one token a group when the offsets are not known."""
        if len(self.spans) != self.n or not self.text:
            return [[i] for i in range(self.n)]
        return char_groups(self.spans, self.special)

    def character_tokens(self, groups: list[list[int]]) -> list[str]:
        """The tokens `merge_characters` gives for `character_groups()`, without merging the weights."""
        spans = self._group_spans(groups)
        return [
            self.tokens[g[0]] if len(g) == 1 else (self.text[a:b].strip() or "\u2423")
            for g, (a, b) in zip(groups, spans or [(0, 0)] * len(groups), strict=True)
        ]

    def _word_text(self, group: list[int]) -> str:
        """The pieces joined; a word with byte pieces of one character shows its span of the text."""
        known = len(group) > 1 and len(self.spans) == self.n and bool(self.text)
        if known and len(char_groups([self.spans[i] for i in group], self.special[group])) < len(group):
            a, b = self.spans[group[0]][0], self.spans[group[-1]][1]
            return self.text[a:b].strip() or "\u2423"
        return "".join(self.tokens[i] for i in group)

    def _group_spans(self, groups: list[list[int]]) -> list[tuple[int, int]]:
        if len(self.spans) != self.n:
            return []
        return [(min(self.spans[i][0] for i in g), max(self.spans[i][1] for i in g)) for g in groups]


def char_groups(spans: list[tuple[int, int]], special: np.ndarray) -> list[list[int]]:
    """Consecutive tokens whose character spans overlap (the byte pieces of one character);
    special tokens and empty spans stay alone."""
    groups: list[list[int]] = []
    end = -1
    for i, (a, b) in enumerate(spans):
        if groups and not special[i] and not special[groups[-1][-1]] and b > a and a < end:
            groups[-1].append(i)
            end = max(end, b)
        else:
            groups.append([i])
            end = b
    return groups


def word_groups(word_ids: list[int]) -> list[list[int]]:
    """Consecutive token indices that share a word id; special tokens (-1) stay alone (each its own key)."""
    runs = groupby(range(len(word_ids)), key=lambda i: word_ids[i] if word_ids[i] >= 0 else -1 - i)
    return [list(run) for _, run in runs]


def merge_word_matrix(weights: np.ndarray, groups: list[list[int]]) -> np.ndarray:
    """(..., n, n) -> (..., g, g): columns summed within a group, rows averaged."""
    onehot = np.zeros((weights.shape[-1], len(groups)), dtype=np.float32)  # (n, g) membership
    for k, members in enumerate(groups):
        onehot[members, k] = 1.0
    to_words = weights @ onehot  # (..., n, g): sum over a word's pieces
    mean_rows = onehot / onehot.sum(0, keepdims=True)  # (n, g) averaging weights
    return np.einsum("ng,...nk->...gk", mean_rows, to_words).astype(np.float32)
