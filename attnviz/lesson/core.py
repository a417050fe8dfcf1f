"""The guided lesson's core: its steps, the pronoun it follows, the referent it knows (its own
example sentences), the heads it shows, and the facts its questions are checked against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .. import i18n
from ..result import Attention

STEPS = ("tokens", "one_head", "all_heads", "pronoun", "switch_off", "limits")
PRONOUNS: dict[str, tuple[str, ...]] = {
    "en": ("it", "he", "she", "they", "him", "her", "them", "its", "his", "their"),
    "zh": ("它们", "他们", "她们", "它", "他", "她"),
}
SAME_OPTIONS = ("same", "different")  # step 3: do all heads look at the same tokens?
LIMIT_OPTIONS = ("proof", "mix", "nothing")  # step 6: what a weight of the head shows
_MARKS = re.compile("##|▁|Ġ|Ċ")  # word-piece and SentencePiece marks on a token


def _bare(token: str) -> str:
    """A token without its word-piece marks, lower case."""
    return _MARKS.sub("", token.strip()).lower()


def find_word(tokens: list[str], word: str, special: np.ndarray | None = None, start: int = 0) -> int | None:
    """Index of the first ordinary token at or after `start` that is `word` (case-insensitive,
    marks ignored) or shows it as unknown ("[UNK]:它"); failing that, outside ASCII, the first
    token that contains it (XLM-R joins characters: 因为它 holds 它)."""
    w = word.strip().lower()
    if not w:
        return None
    ordinary = [i for i in range(max(start, 0), len(tokens)) if special is None or not special[i]]
    for i in ordinary:
        bare = _bare(tokens[i])
        if bare == w or tokens[i].lower().endswith(":" + w):
            return i
    if w.isascii():
        return None  # "it" inside "with" is not the word "it"
    return next((i for i in ordinary if w in _bare(tokens[i])), None)


def find_pronoun(att: Attention, lang: str) -> int | None:
    """The first pronoun of the sentence (the language's list, longest first), or None."""
    found = (find_word(att.tokens, p, att.special) for p in PRONOUNS.get(lang, PRONOUNS["en"]))
    return min((i for i in found if i is not None), default=None)


def _words(att: Attention) -> list[int]:
    """The ordinary tokens with a letter or digit; failing that, the ordinary ones; failing that, all."""
    words = [i for i in range(att.n) if not att.special[i] and any(ch.isalnum() for ch in _bare(att.tokens[i]))]
    return words or [i for i in range(att.n) if not att.special[i]] or list(range(att.n))


def lesson_query(att: Attention, lang: str) -> tuple[int, bool]:
    """(query, pronoun_found): the token the lesson follows, the first pronoun, else the last word."""
    pronoun = find_pronoun(att, lang)
    return (_words(att)[-1], False) if pronoun is None else (pronoun, True)


def referent_choices(att: Attention, query: int) -> list[int]:
    """The tokens a student may name as what the query refers to: every word but the query, in
    the order of the sentence (a pronoun may point forward: "When she came, Mary…")."""
    return [i for i in _words(att) if i != query] or [i for i in range(att.n) if i != query] or [query]


def known_referent(att: Attention, lang: str, text: str) -> int | None:
    """The referent's token where the sentence is one of the lesson's pronoun examples (its key
    word names it); None for any other sentence: the student says it."""
    example = i18n.example_for(text, lang)
    coref = {s["id"] for fam in i18n.examples(lang)["families"] if fam["id"] == "coref" for s in fam["sentences"]}
    if example is None or example["id"] not in coref:
        return None
    return find_word(att.tokens, str(example["key"]), att.special)


@dataclass(frozen=True)
class HeadPick:
    """The head the lesson points to: the one whose row for `query` puts the most weight on `key`."""

    layer: int
    head: int
    query: int
    key: int
    weight: float  # weights[layer, head, query, key]
    n: int

    @property
    def uniform(self) -> float:
        """What a head that looks everywhere equally gives each token: 1/n."""
        return 1.0 / self.n

    @property
    def ratio(self) -> float:
        return self.weight * self.n

    @property
    def above_uniform(self) -> bool:
        return self.weight > self.uniform


def _pick(att: Attention, query: int, keys: list[int]) -> HeadPick:
    """The head whose row for `query` puts the most weight on one of `keys`, and that key (the
    first such head, layer by layer, on a tie)."""
    if not (0 <= query < att.n and all(0 <= k < att.n for k in keys)):
        raise IndexError(f"query {query} / keys {keys} outside 0..{att.n - 1}")
    rows = np.asarray(att.weights[:, :, query, :], dtype=np.float64)[:, :, keys]  # (L, H, m)
    layer, head = divmod(int(np.argmax(rows.max(axis=-1))), att.n_heads)
    best = int(np.argmax(rows[layer, head]))
    return HeadPick(int(layer), int(head), query, keys[best], float(rows[layer, head, best]), att.n)


def find_head(att: Attention, query: int, key: int) -> HeadPick:
    """The (layer, head) whose row for `query` puts the most weight on `key`."""
    return _pick(att, query, [key])


def look_head(att: Attention, query: int) -> HeadPick:
    """The head steps 2 and 3 show, without any referent: the largest single weight of `query`'s
    row on an ordinary token other than itself; its `key` is that token."""
    others = (
        [i for i in range(att.n) if i != query and not att.special[i]]
        or [i for i in range(att.n) if i != query]
        or [query]
    )
    return _pick(att, query, others)


def head_name(layer: int, head: int, lang: str) -> str:
    """A head as every view labels it (the same words as the charts' axes)."""
    return i18n.t("fig.layer_head", lang, layer=layer, head=head)


@dataclass(frozen=True, eq=False)
class Facts:
    """What the lesson's questions are checked against, all from the visitor's sentence."""

    tokens: tuple[str, ...]
    special: tuple[bool, ...]
    pick: HeadPick
    att: Attention  # the sentence's: the picked head's map is drawn from it (views.heatmap_spec)
    row: np.ndarray  # (n,) the picked head's row for the query
    column: np.ndarray  # (L, H) every head's weight from the query to the key
    tops: np.ndarray  # (L, H) int: the token each head's row for the query weighs most
    top_weights: np.ndarray  # (L, H) that largest weight
    distances: np.ndarray | None = None  # (n,) final-state cosine distances with the picked head off
    sentence_distance: float | None = None
    norm_row: np.ndarray | None = None  # (n,) the picked head's norm-based row, summing to 1

    @classmethod
    def of(
        cls,
        att: Attention,
        pick: HeadPick,
        *,
        distances: np.ndarray | None = None,
        sentence_distance: float | None = None,
        norm_row: np.ndarray | None = None,
    ) -> Facts:
        rows = np.asarray(att.weights[:, :, pick.query, :], dtype=np.float64)  # (L, H, n)
        return cls(
            tokens=tuple(att.tokens),
            special=tuple(bool(s) for s in att.special),
            pick=pick,
            att=att,
            row=rows[pick.layer, pick.head].copy(),
            column=rows[:, :, pick.key].copy(),
            tops=rows.argmax(axis=-1),
            top_weights=rows.max(axis=-1),
            distances=None if distances is None else np.asarray(distances, dtype=np.float64),
            sentence_distance=sentence_distance,
            norm_row=None if norm_row is None else np.asarray(norm_row, dtype=np.float64),
        )

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def query_token(self) -> str:
        return self.tokens[self.pick.query]

    @property
    def key_token(self) -> str:
        return self.tokens[self.pick.key]

    @property
    def distinct_tops(self) -> int:
        return len(set(self.tops.ravel().tolist()))

    @property
    def heads_above(self) -> int:
        """How many heads give the key more than the uniform 1/n from the query."""
        return int(np.count_nonzero(self.column > self.pick.uniform))
