"""The encoder-decoder tasks: a source sequence in, a target sequence out, and for every target
token the source positions it copies (its alignment), so the cross-attention can be scored.

    copy     t05 t17 t02 ...  ->  t05 t17 t02 ...       a diagonal
    reverse  t05 t17 t02 ...  ->  ... t02 t17 t05       the anti-diagonal
    sort     t05 t17 t02 ...  ->  t02 t05 t17 ...       a permutation (each output reads its token
                                                          wherever it stands; ties count together)
    date     3 May 2 0 2 6    ->  2 0 2 6 年 5 月 3 日  crossing lines: the year moves to the front,
                                                          the day to the end ("3 May 2026" ->
                                                          "2026年5月3日"); 年 月 日 copy nothing

The decoder reads `<s> y1 .. y(m-1)` and predicts `y1 .. ym` (every target has a fixed length,
so no end token is needed); the encoder reads the source as it is.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from .tasks import SPECIALS, symbol

SEQ2SEQ_TASKS = ("copy", "reverse", "sort", "date")
MONTHS = tuple(calendar.month_abbr[1:])  # Jan .. Dec, independent of the locale
CJK_MARKS = ("年", "月", "日")
YEARS = (1900, 2099)


@dataclass(frozen=True)
class PairBatch:
    src: torch.Tensor  # (B, S) long: what the encoder reads
    dec_in: torch.Tensor  # (B, T) long: <s> y1 .. y(T-1), what the decoder reads
    tgt: torch.Tensor  # (B, T) long: y1 .. yT, what it should write
    align: np.ndarray  # (B, T, S) bool: the source positions target t copies (none: not scored)


@dataclass
class PairTask:
    """A task's shared vocabulary (index = id, specials first) and its fixed lengths."""

    name: str
    vocab: list[str]
    src_len: int
    tgt_len: int
    symbols: int = 32

    @cached_property
    def ids(self) -> dict[str, int]:
        return {tok: i for i, tok in enumerate(self.vocab)}

    def examples(self, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(src (B, S), tgt (B, T), align (B, T, S)) as ids."""
        if self.name == "date":
            return self._dates(size, rng)
        m = self.src_len
        src = rng.integers(0, self.symbols, size=(size, m)) + len(SPECIALS)  # (B, m)
        pos = np.broadcast_to(np.arange(m), (size, m))
        if self.name == "reverse":
            pos = pos[:, ::-1]
        elif self.name == "sort":
            pos = np.argsort(src, axis=1, kind="stable")
        tgt = np.take_along_axis(src, pos, axis=1)
        if self.name == "sort":  # a repeated symbol may be read from any of its places
            align = tgt[:, :, None] == src[:, None, :]
        else:
            align = pos[:, :, None] == np.arange(m)[None, None, :]
        return src, tgt, align

    def _dates(self, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ids = self.ids
        day = rng.integers(1, 29, size=size)  # every month has days 1-28
        month = rng.integers(1, 13, size=size)
        year = rng.integers(YEARS[0], YEARS[1] + 1, size=size)
        digits = [[ids[c] for c in str(y)] for y in year]
        src = np.array([[ids[str(d)], ids[MONTHS[m - 1]], *ys] for d, m, ys in zip(day, month, digits, strict=True)])
        marks = [ids[c] for c in CJK_MARKS]
        tgt = np.array(
            [
                [*ys, marks[0], ids[str(m)], marks[1], ids[str(d)], marks[2]]
                for d, m, ys in zip(day, month, digits, strict=True)
            ]
        )
        copies = np.array([2, 3, 4, 5, -1, 1, -1, 0, -1])  # source position of each target token
        align = copies[None, :, None] == np.arange(6)[None, None, :]
        return src, tgt, np.broadcast_to(align, (size, 9, 6)).copy()

    def batch(self, size: int, rng: np.random.Generator) -> PairBatch:
        src, tgt, align = self.examples(size, rng)
        dec_in = np.concatenate([np.full((size, 1), 2), tgt[:, :-1]], axis=1)  # <s> first
        as_long = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=torch.long)  # noqa: E731
        return PairBatch(as_long(src), as_long(dec_in), as_long(tgt), align)

    def tokens(self, ids: np.ndarray | list[int]) -> list[str]:
        return [self.vocab[int(i)] for i in ids]

    def parse(self, text: str) -> list[int]:
        """A source typed by a visitor ("t03 t17 t05", "3 May 2026") as ids; ValueError naming
        what is wrong (a token outside the vocabulary, a wrong length)."""
        words = text.split()
        if self.name == "date" and len(words) == 3 and words[2].isdigit():  # "3 May 2026" -> 3 May 2 0 2 6
            words = [words[0], words[1][:3].title(), *words[2]]
        bad = [w for w in words if w not in self.ids or self.ids[w] < len(SPECIALS)]
        if bad:
            raise ValueError(f"not in the vocabulary of the {self.name} task: {', '.join(bad[:5])}")
        if len(words) != self.src_len:
            raise ValueError(f"the {self.name} task reads {self.src_len} source tokens, got {len(words)}")
        return [self.ids[w] for w in words]


def date_text(day: int, month: int, year: int) -> str:
    return f"{day} {MONTHS[month - 1]} {year}"


def make_pair_task(name: str, *, symbols: int = 32, length: int = 8) -> PairTask:
    """A seq2seq task by name; ValueError for what cannot be."""
    if name not in SEQ2SEQ_TASKS:
        raise ValueError(f"unknown seq2seq task {name!r}: choose one of {', '.join(SEQ2SEQ_TASKS)}")
    if name == "date":
        return PairTask(name, [*SPECIALS, *(str(i) for i in range(32)), *MONTHS, *CJK_MARKS], 6, 9)
    if not 2 <= symbols <= 100:
        raise ValueError("symbols must be between 2 and 100")
    if not 1 <= length <= 64:
        raise ValueError("length must be between 1 and 64")
    return PairTask(name, [*SPECIALS, *(symbol(i) for i in range(symbols))], length, length, symbols)
