"""The guided lesson's core (no streamlit): its steps, the pronoun and antecedent it follows, the
head it shows first, the facts its questions are checked against, and the checks themselves.

The lesson follows the textbook chapter: tokens -> one head -> all heads -> "it"/它 finds
"animal"/动物 -> switch a head off -> what the picture does not tell you. Its default head is
found for the visitor's own sentence, never fixed in advance: the head whose row for the pronoun
puts the most weight on the antecedent (`find_head`); a uniform head would give every token
1/n, so the lesson says how far above that line the head is.

XLM-R's vocabulary (e5-small) joins characters: 因为它 ("because it") is one token, so a word is
found as the token that is it or, for a word outside ASCII, the token that contains it
(`find_word`). Handout HTML: attnviz/lesson_handout.py.

    att = model.attend("动物没有过马路，因为它太累了。")
    q, k = lesson_pair(att, "zh")          # the token holding 它, the one holding 动物
    pick = find_head(att, q, k)            # (layer, head) and its weight vs 1/n
    facts = Facts.of(att, pick)
    check("tokens", 14, facts).right       # True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from . import i18n
from .result import Attention

__all__ = [
    "LIMIT_OPTIONS",
    "PRONOUNS",
    "SAME_OPTIONS",
    "STEPS",
    "Facts",
    "HeadPick",
    "Verdict",
    "answer_label",
    "antecedent_word",
    "check",
    "find_head",
    "find_pronoun",
    "find_word",
    "head_name",
    "lesson_pair",
    "step_fields",
]

STEPS = ("tokens", "one_head", "all_heads", "pronoun", "switch_off", "limits")
PRONOUNS: dict[str, tuple[str, ...]] = {
    "en": ("it", "he", "she", "they", "him", "her", "them", "its", "his", "their"),
    "zh": ("它们", "他们", "她们", "它", "他", "她"),
}
SAME_OPTIONS = ("same", "different")  # step 3: do all heads look at the same tokens?
LIMIT_OPTIONS = ("proof", "mix", "nothing")  # step 6: what a weight of the head shows
TIE = 0.01  # two weights this close look the same in a picture: either answer is right
_MARKS = ("##", "▁", "Ġ", "Ċ")  # word-piece and SentencePiece marks on a token


def _bare(token: str) -> str:
    """A token without its word-piece marks, lower case."""
    text = token.strip()
    for mark in _MARKS:
        text = text.replace(mark, "")
    return text.lower()


def find_word(tokens: list[str], word: str, special: np.ndarray | None = None, start: int = 0) -> int | None:
    """Index of the first ordinary token at or after `start` that is `word` (case-insensitive,
    word-piece marks ignored), or shows it as unknown ("[UNK]:它"); failing that, for a word with
    characters outside ASCII, the first token that contains it (XLM-R's 因为它 holds 它)."""
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
    found = [find_word(att.tokens, p, att.special) for p in PRONOUNS.get(lang, PRONOUNS["en"])]
    hits = [i for i in found if i is not None]
    return min(hits) if hits else None


def antecedent_word(lang: str) -> str | None:
    """The word the language's lesson sentence refers back to (the first example's key:
    animal / 动物), looked for in the visitor's sentence first."""
    families = i18n.examples(lang)["families"]
    coref = next((fam for fam in families if fam["id"] == "coref"), None)
    return str(coref["sentences"][0]["key"]) if coref else None


def _is_word(token: str) -> bool:
    return any(ch.isalnum() for ch in _bare(token))


def lesson_pair(att: Attention, lang: str, key_word: str | None = None) -> tuple[int, int, bool]:
    """(query, key, pronoun_found) the lesson follows. The query is the first pronoun (else the
    last word). The key is `key_word` where the sentence has it (the language's example
    antecedent: animal / 动物), else the word before the query that the model's heads, on
    average, give the query's row the most weight to (else the first word)."""
    words = [i for i in range(att.n) if not att.special[i] and _is_word(att.tokens[i])]
    words = words or [i for i in range(att.n) if not att.special[i]] or list(range(att.n))
    pronoun = find_pronoun(att, lang)
    query = words[-1] if pronoun is None else pronoun
    key = find_word(att.tokens, key_word, att.special) if key_word else None
    if key is None or key == query:
        before = [i for i in words if i < query] or [i for i in words if i != query] or [query]
        mean_row = att.weights[:, :, query, :].mean(axis=(0, 1))
        key = max(before, key=lambda i: (float(mean_row[i]), -i))
    return query, key, pronoun is not None


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


def find_head(att: Attention, query: int, key: int) -> HeadPick:
    """The (layer, head) whose row for `query` puts the most weight on `key` (the first such
    head, layer by layer, on a tie)."""
    if not (0 <= query < att.n and 0 <= key < att.n):
        raise IndexError(f"query {query} / key {key} outside 0..{att.n - 1}")
    column = np.asarray(att.weights[:, :, query, key], dtype=np.float64)  # (L, H)
    flat = int(np.argmax(column))
    layer, head = divmod(flat, att.n_heads)
    return HeadPick(int(layer), int(head), query, key, float(column[layer, head]), att.n)


def head_name(layer: int, head: int, lang: str) -> str:
    """A head as every view labels it (the same words as the charts' axes)."""
    return i18n.t("fig.layer_head", lang, layer=layer, head=head)


@dataclass(frozen=True, eq=False)
class Facts:
    """What the lesson's questions are checked against, all from the visitor's sentence."""

    tokens: tuple[str, ...]
    special: tuple[bool, ...]
    pick: HeadPick
    head_map: np.ndarray  # (n, n) the picked head's map
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
            head_map=np.asarray(att.weights[pick.layer, pick.head], dtype=np.float64),
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
    def row_top(self) -> int:
        return int(np.argmax(self.row))

    @property
    def distinct_tops(self) -> int:
        return len(set(self.tops.ravel().tolist()))

    @property
    def moved_most(self) -> int | None:
        return None if self.distances is None else int(np.argmax(self.distances))


@dataclass(frozen=True)
class Verdict:
    """Right or wrong, and why: a catalogue key and its fields (visitor tokens among them, so
    whoever shows it escapes them for the place they land: `why(lang, escape)`)."""

    right: bool
    key: str
    fields: Mapping[str, str]

    def why(self, lang: str, escape: Callable[[str], str] = str) -> str:
        return i18n.t(self.key, lang, **{name: escape(value) for name, value in self.fields.items()})


def _pct(x: float) -> str:
    return f"{x:.0%}"


def _near_top(values: np.ndarray, answer: int) -> bool:
    return 0 <= answer < values.size and float(values.ravel()[answer]) >= float(values.max()) - TIE


def check(step: str, answer: object, facts: Facts, lang: str = i18n.DEFAULT_LANGUAGE) -> Verdict:
    """Check the visitor's answer to `step`'s question against the facts of their sentence.
    Answers: "tokens" an int (how many tokens); "one_head" and "switch_off" a token index;
    "all_heads" one of SAME_OPTIONS; "pronoun" a head as layer * n_heads + head; "limits" one of
    LIMIT_OPTIONS. A reading of a picture is right when its value is within TIE of the largest."""
    p, f = facts.pick, facts
    q, k = f.query_token, f.key_token
    if step == "tokens":
        specials = sum(f.special)
        right = isinstance(answer, (int, np.integer)) and int(answer) == f.n
        return Verdict(
            right, "lesson.why.tokens", {"n": str(f.n), "special": str(specials), "text": str(f.n - specials)}
        )
    if step == "one_head":
        top = f.row_top
        right = isinstance(answer, (int, np.integer)) and _near_top(f.row, int(answer))
        fields = {"q": q, "top": f.tokens[top], "w": _pct(f.row[top]), "head": head_name(p.layer, p.head, lang)}
        return Verdict(right, "lesson.why.one_head", fields)
    if step == "all_heads":
        expected = "different" if f.distinct_tops > 1 else "same"
        fields = {"q": q, "heads": str(f.column.size), "k": str(f.distinct_tops)}
        return Verdict(answer == expected, f"lesson.why.all_heads_{expected}", fields)
    if step == "pronoun":
        right = isinstance(answer, (int, np.integer)) and _near_top(f.column, int(answer))
        fields = {
            "q": q,
            "k": k,
            "head": head_name(p.layer, p.head, lang),
            "w": _pct(p.weight),
            "n": str(p.n),
            "u": _pct(p.uniform),
            "ratio": f"{p.ratio:.1f}",
        }
        return Verdict(right, "lesson.why.pronoun" if p.above_uniform else "lesson.why.pronoun_below", fields)
    if step == "switch_off":
        if f.distances is None or f.moved_most is None:
            return Verdict(False, "lesson.why.switch_off_none", {})
        top = f.moved_most
        right = isinstance(answer, (int, np.integer)) and _near_top(f.distances, int(answer))
        fields = {
            "head": head_name(p.layer, p.head, lang),
            "top": f.tokens[top],
            "d": f"{f.distances[top]:.3f}",
            "s": f"{f.sentence_distance or 0.0:.4f}",
        }
        return Verdict(right, "lesson.why.switch_off", fields)
    if step == "limits":
        norm = "—" if f.norm_row is None else _pct(f.norm_row[p.key])
        return Verdict(answer == "mix", "lesson.why.limits", {"q": q, "k": k, "w": _pct(p.weight), "norm": norm})
    raise ValueError(f"unknown step {step!r}; the steps are {', '.join(STEPS)}")


def step_fields(facts: Facts, lang: str) -> dict[str, str]:
    """The fields of the steps' texts (what to look for, the questions): the query and key
    tokens (visitor text: escape them where they land), the head, n and the uniform line."""
    p = facts.pick
    return {
        "q": facts.query_token,
        "k": facts.key_token,
        "head": head_name(p.layer, p.head, lang),
        "n": str(p.n),
        "u": _pct(p.uniform),
        "w": _pct(p.weight),
        "layer": str(p.layer),
    }


def answer_label(step: str, value: object, facts: Facts, lang: str) -> str:
    """An answer as the visitor saw it on the page (a token as "8: 因为它", as the app's pickers)."""
    if step in ("one_head", "switch_off") and isinstance(value, (int, np.integer)) and 0 <= value < facts.n:
        return f"{int(value)}: {facts.tokens[int(value)]}"
    if step == "pronoun" and isinstance(value, (int, np.integer)):
        layer, head = divmod(int(value), facts.column.shape[1])
        return head_name(layer, head, lang)
    if step in ("all_heads", "limits"):
        return i18n.t(f"lesson.opt.{value}", lang)
    return str(value)
