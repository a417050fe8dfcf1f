"""multilingual-e5-small's tokenizer (XLM-R's SentencePiece unigram) built with the `tokenizers`
library from the vocabulary, scores and normalisation map in `e5-small-q4.bin`, the way `e5.c`
tokenises (`tok_content`):

1. each code point through the file's normalisation map (NFKC-like: full-width forms to ASCII,
   control characters dropped, other spaces to " "): a `Precompiled` normaliser, whose charsmap
   (a darts-clone double-array trie over UTF-8 keys plus the replacement strings, SentencePiece's
   format) is built here from the map;
2. runs of spaces collapsed to one;
3. a "▁" put in front unless the text starts with a space, every space made "▁" (`Metaspace`);
4. the best segmentation under the piece scores (Viterbi; `Unigram`), an unknown character
   scoring the lowest piece score - 10, as both do;
5. "<s> ... </s>" around it.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from .e5_file import E5File


def precompiled_charsmap(mapping: Mapping[str, str]) -> bytes:
    """SentencePiece's precompiled charsmap for `mapping` (key string -> replacement): u32 trie
    bytes, the trie's u32 units, then the replacements, each ending in NUL. A unit (darts-clone):
    bits 0-7 the label, bit 8 "has a leaf", bit 9 "offset shifted by 8", bits 10-31 the offset
    to XOR into the position for the children; a leaf unit holds its value | 1 << 31."""
    strings = bytearray()
    keys: dict[bytes, int] = {}
    for key in sorted(mapping, key=lambda k: k.encode()):
        keys[key.encode()] = len(strings)
        strings += mapping[key].encode() + b"\0"
    trie = _DoubleArray(keys).units
    return struct.pack("<I", 4 * len(trie)) + struct.pack(f"<{len(trie)}I", *trie) + bytes(strings)


class _DoubleArray:
    """A double-array trie in darts-clone's layout, built greedily: each node gets a base
    (unique, so a label check can never confuse two nodes) whose slots base ^ label are free
    for all its children; a key's value sits at base ^ 0 of its last node. Candidate bases are
    tried a window at a time with numpy."""

    _WINDOW = 4096  # a multiple of 256: base ^ label stays inside the window

    def __init__(self, keys: Mapping[bytes, int]):
        if any(not k or 0 in k for k in keys):
            raise ValueError("keys must be non-empty and hold no NUL byte")
        self._units = np.zeros(2 * self._WINDOW, dtype=np.uint32)
        self._used = np.zeros(2 * self._WINDOW, dtype=bool)
        self._is_base = np.zeros(2 * self._WINDOW, dtype=bool)
        self._used[0] = True  # the root
        self._front = 1
        self._place(0, sorted(keys.items()), 0)
        self.units = self._units[: int(np.flatnonzero(self._used)[-1]) + 1].tolist()

    def _find_base(self, labels: np.ndarray) -> int:
        free = np.flatnonzero(~self._used[self._front :])
        self._front += int(free[0]) if free.size else self._used.size - self._front
        lo = self._front & ~0xFF
        while lo < 1 << 21:
            if lo + self._WINDOW > self._used.size:  # the arrays grow to the window, at least doubling
                extra = max(lo + self._WINDOW, 2 * self._used.size) - self._used.size
                self._units = np.concatenate([self._units, np.zeros(extra, dtype=np.uint32)])
                self._used = np.concatenate([self._used, np.zeros(extra, dtype=bool)])
                self._is_base = np.concatenate([self._is_base, np.zeros(extra, dtype=bool)])
            bases = np.arange(lo, lo + self._WINDOW)
            ok = ~self._is_base[bases] & ~self._used[bases[:, None] ^ labels[None, :]].any(axis=1)
            found = np.flatnonzero(ok)
            if found.size:
                return int(bases[found[0]])
            lo += self._WINDOW
        raise ValueError("the trie outgrew darts-clone's offsets")

    def _place(self, pos: int, items: list[tuple[bytes, int]], depth: int) -> None:
        """Give node `pos` (whose keys share `depth` leading bytes) its children."""
        children: dict[int, list[tuple[bytes, int]]] = {}
        leaf: int | None = None
        for key, value in items:
            if len(key) == depth:
                leaf = value
            else:
                children.setdefault(key[depth], []).append((key, value))
        labels = ([0] if leaf is not None else []) + sorted(children)
        base = self._find_base(np.array(labels, dtype=np.int64))
        self._is_base[base] = True
        self._used[[base ^ c for c in labels]] = True
        self._units[pos] |= (pos ^ base) << 10 | (1 << 8 if leaf is not None else 0)
        if leaf is not None:
            self._units[base] = leaf | 1 << 31
        for c in children:
            self._units[base ^ c] = c
        for c in sorted(children):
            self._place(base ^ c, children[c], depth + 1)


def _outside(pieces: list[str]) -> str:
    """A regex matching one character that occurs in no piece."""
    known = sorted({ord(c) for p in pieces for c in p})
    ranges = []
    for _, run in itertools.groupby(enumerate(known), key=lambda i_cp: i_cp[1] - i_cp[0]):  # consecutive runs
        first, *rest = (cp for _, cp in run)
        ranges.append(f"\\x{{{first:x}}}" + (f"-\\x{{{rest[-1]:x}}}" if rest else ""))
    return "[^" + "".join(ranges) + "]"


def build_tokenizer(f: E5File) -> Any:
    """A `PreTrainedTokenizerFast` over a `tokenizers.Tokenizer` equal to e5.c's tokenising."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = [(p, float(s)) for p, s in zip(f.pieces, f.scores.tolist(), strict=True)]
    tok = Tokenizer(models.Unigram(vocab, unk_id=f.unk, byte_fallback=False))
    charsmap = precompiled_charsmap({chr(cp): out for cp, out in f.normalise.items()})
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(charsmap), normalizers.Replace(Regex(" {2,}"), " ")])
    # a character in no piece is always unknown; alone, it stays one <unk> as in e5.c (the
    # Unigram model would fuse a run of them into one)
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True),
            pre_tokenizers.Split(Regex(_outside(f.pieces)), behavior="isolated"),
        ]
    )
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    bos, eos = f.pieces[f.bos], f.pieces[f.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, f.bos), (eos, f.eos)],
    )

    class E5Tokenizer(PreTrainedTokenizerFast):
        """Takes the backend as it is: `tokenizer_object=` would deep-copy it, and the 250k-piece
        unigram trie is about 230 MB."""

        def __init__(self, **kwargs: object):
            self._tokenizer = tok
            super().__init__(**kwargs)

    return E5Tokenizer(
        bos_token=bos,
        eos_token=eos,
        sep_token=eos,
        cls_token=bos,
        unk_token=f.pieces[f.unk],
        pad_token=f.pieces[f.pad],
        mask_token="<mask>",
        model_max_length=f.positions,
    )
