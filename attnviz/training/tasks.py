"""The training tasks: what a sequence looks like, which predictions are scored, and where each
query row *should* attend, so a learned pattern can be measured.

Every sequence starts with `<s>`; the model reads `seq[:-1]` and predicts `seq[1:]` (causal).

    copy       <s> s1 .. sm > s1 .. sm      target row m+i (">" or the (i-1)-th copy) looks at
                                            source i: a shifted diagonal, row - col = m
    reverse    <s> s1 .. sm > sm .. s1      row m+i looks at source m+1-i: an anti-diagonal,
                                            row + col = 2m + 1
    induction  <s> a1 .. ar a1 .. ar <pad>  the period r varies between sequences, so no fixed
                                            offset solves it; row t of the second copy looks at
                                            t - r + 1, the token after the previous occurrence
                                            of its own token (Olsson et al. 2022)
    text       <s> c1 c2 ... (a window)     next character of a pasted text, any script

A pattern is, per query row, the key column it should look at (-1: not scored); its score is
the mean attention on that column (scores.py). "previous" (row t looks at t - 1) is measured
on every task: it is the first layer's half of an induction circuit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..models.tokens import clean_text

PAD, UNK, BOS, SEP = "<pad>", "<unk>", "<s>", ">"
SPECIALS = (PAD, UNK, BOS)  # ids 0, 1, 2 in every vocabulary
IGNORE = -100  # target of a prediction that is not scored (torch's cross-entropy default)
TASKS = ("copy", "reverse", "induction", "text")
MIN_TEXT_CHARS = 20
MAX_TEXT_CHARS = 20_000  # longer pastes are cut: a classroom text, not a corpus
MAX_CHARS_VOCAB = 1_500  # distinct characters kept (most frequent first); the rest read as <unk>
PROBE_TEXT_CHARS = 40  # characters of the text task's probe (its maps stay readable)
Sequences = tuple[np.ndarray, dict[str, np.ndarray]]  # full sequences (B, S), each pattern's columns (B, S)


def symbol(i: int) -> str:
    """The readable token of random symbol i: t00, t01, ..."""
    return f"t{i:02d}"


@dataclass(frozen=True)
class Batch:
    ids: torch.Tensor  # (B, T) long: what the model reads
    targets: torch.Tensor  # (B, T) long: the next token, IGNORE where not scored
    patterns: dict[str, np.ndarray]  # name -> (B, T) int: the key row t should look at, -1 if none


@dataclass(frozen=True)
class Probe:
    """The fixed input whose maps are snapshotted: ids (n,), and each pattern's (n,) columns."""

    ids: list[int]
    patterns: dict[str, np.ndarray]
    text: str  # what `runner.attend` reads to give the same tokens (without the leading <s>)


@dataclass
class Task:
    """A task's vocabulary (index = id), sequence length and batches."""

    name: str
    vocab: list[str]
    max_len: int  # the longest full sequence (the position table's size)
    char_level: bool = False
    pattern_names: tuple[str, ...] = ("previous",)
    expected: str = "previous"  # the pattern the task is meant to show
    every_token: bool = False  # every next token is scored (text), not only the expected pattern's rows
    reach: tuple[int, int] = (1, 1)  # fewest, most tokens back a scored row's answer sits (text: the one before)

    def batch(self, size: int, rng: np.random.Generator) -> Batch:
        seqs, cols = self.sequences(size, rng)  # (B, S), name -> (B, S)
        ids = torch.as_tensor(seqs[:, :-1], dtype=torch.long)  # (B, S-1)
        targets = torch.as_tensor(seqs[:, 1:], dtype=torch.long).clone()
        scored = seqs[:, 1:] != 0 if self.every_token else cols[self.expected][:, :-1] >= 0
        targets[~torch.as_tensor(scored)] = IGNORE
        return Batch(ids, targets, {k: v[:, :-1] for k, v in cols.items()})

    def sequences(self, size: int, rng: np.random.Generator, probe: bool = False) -> Sequences:
        """`size` full sequences (B, S) and each pattern's columns (B, S); `probe`: the one
        fixed sequence whose maps are shown."""
        raise NotImplementedError

    def probe(self, seed: int) -> Probe:
        seqs, cols = self.sequences(1, np.random.default_rng([seed, 7]), probe=True)
        n = int((seqs[0] != 0).sum())  # padding only ever follows the sequence
        ids = [int(i) for i in seqs[0, :n]]
        return Probe(ids, {k: v[0, :n] for k, v in cols.items()}, self.probe_text(ids))

    def probe_text(self, ids: list[int]) -> str:
        return " ".join(self.vocab[i] for i in ids[1:])


def _previous(seqs: np.ndarray) -> np.ndarray:
    """Row t looks at t - 1, for every real token after the first (row 0 and padding rows: -1)."""
    return np.where(seqs == 0, -1, np.arange(seqs.shape[1]) - 1)


class CopyTask(Task):
    """copy / reverse: m random symbols, ">", then the same symbols (reversed for reverse)."""

    def __init__(self, name: str, symbols: int, length: int):
        super().__init__(name, [*SPECIALS, SEP, *(symbol(i) for i in range(symbols))], 2 * length + 2)
        self.symbols, self.length = symbols, length
        self.pattern_names, self.expected = ("diagonal", "previous"), "diagonal"
        self.reach = (length, length) if name == "copy" else (1, 2 * length - 1)

    def sequences(self, size: int, rng: np.random.Generator, probe: bool = False) -> Sequences:
        m = self.length
        src = rng.integers(0, self.symbols, size=(size, m)) + len(SPECIALS) + 1  # (B, m)
        tgt = src[:, ::-1] if self.name == "reverse" else src
        seqs = np.concatenate([np.full((size, 1), 2), src, np.full((size, 1), 3), tgt], axis=1)  # (B, 2m+2)
        rows = np.arange(2 * m + 2)
        want = np.where((rows > m) & (rows <= 2 * m), 2 * m + 1 - rows if self.name == "reverse" else rows - m, -1)
        diagonal = np.broadcast_to(want, seqs.shape).copy()
        return seqs, {"diagonal": diagonal, "previous": _previous(seqs)}


class InductionTask(Task):
    """<s>, r distinct random symbols, the same r again, padding to a fixed length; r varies."""

    def __init__(self, symbols: int, periods: tuple[int, int]):
        lo, hi = periods
        if not 2 <= lo <= hi or hi > symbols:
            raise ValueError(f"periods must satisfy 2 <= low <= high <= symbols ({symbols}), got {lo}-{hi}")
        super().__init__("induction", [*SPECIALS, *(symbol(i) for i in range(symbols))], 2 * hi + 1)
        self.symbols, self.periods = symbols, (lo, hi)
        self.pattern_names, self.expected = ("induction", "previous"), "induction"
        self.reach = (lo - 1, hi - 1)  # the token after the previous occurrence, r - 1 back

    def sequences(self, size: int, rng: np.random.Generator, probe: bool = False) -> Sequences:
        lo, hi = self.periods
        S = self.max_len
        seqs = np.zeros((size, S), dtype=np.int64)
        induction = np.full((size, S), -1, dtype=np.int64)
        periods = np.full(size, (lo + hi) // 2) if probe else rng.integers(lo, hi + 1, size=size)
        for b, r in enumerate(periods):
            # distinct symbols: each token of the second copy has exactly one earlier occurrence
            a = rng.permutation(self.symbols)[:r] + len(SPECIALS)
            seqs[b, 0] = 2
            seqs[b, 1 : 2 * r + 1] = np.concatenate([a, a])
            t = np.arange(r + 1, 2 * r)  # rows of the second copy whose next token repeats
            induction[b, t] = t - r + 1
        return seqs, {"induction": induction, "previous": _previous(seqs)}


class TextTask(Task):
    """Windows of a pasted text, one character a token; `<s>` first."""

    def __init__(self, text: str, block: int):
        text = clean_text(text)[:MAX_TEXT_CHARS]
        if len(text.strip()) < MIN_TEXT_CHARS:
            raise ValueError(f"the text is too short to learn from: give at least {MIN_TEXT_CHARS} characters")
        chars, counts = np.unique(np.array(list(text)), return_counts=True)
        kept = [str(c) for c in chars[np.argsort(-counts, kind="stable")][:MAX_CHARS_VOCAB]]
        super().__init__(
            "text", [*SPECIALS, *sorted(kept)], min(block, len(text) + 1), char_level=True, every_token=True
        )
        ids = {tok: i for i, tok in enumerate(self.vocab)}
        self.text = text
        self.data = np.array([ids.get(ch, 1) for ch in text], dtype=np.int64)

    def probe_text(self, ids: list[int]) -> str:
        return self.text[: len(ids) - 1]  # the probe is the text's first window

    def sequences(self, size: int, rng: np.random.Generator, probe: bool = False) -> Sequences:
        width = self.max_len - 1
        starts = np.zeros(1, dtype=np.int64) if probe else rng.integers(0, len(self.data) - width + 1, size=size)
        if probe:
            width = min(width, PROBE_TEXT_CHARS)
        windows = self.data[starts[:, None] + np.arange(width)]  # (B, width)
        seqs = np.concatenate([np.full((len(starts), 1), 2), windows], axis=1)
        return seqs, {"previous": _previous(seqs)}


def make_task(
    name: str,
    *,
    text: str | None = None,
    symbols: int = 32,
    length: int = 8,
    periods: tuple[int, int] = (6, 14),
    block: int = 64,
) -> Task:
    """A task by name. `symbols`: random symbols (copy, reverse, induction); `length`: the
    source of copy / reverse; `periods`: the range of the induction period; `text` and
    `block` (its window, <s> included): the text task. ValueError for what cannot be."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}: choose one of {', '.join(TASKS)}")
    if name == "text":
        if not isinstance(text, str):
            raise ValueError("the text task needs a text to learn from")
        if not 8 <= block <= 512:
            raise ValueError("block must be between 8 and 512 characters")
        return TextTask(text, block)
    if not 2 <= symbols <= 100:
        raise ValueError("symbols must be between 2 and 100")
    if name == "induction":
        return InductionTask(symbols, periods)
    if not 1 <= length <= 64:
        raise ValueError("length must be between 1 and 64")
    return CopyTask(name, symbols, length)
