"""The guided lesson's core (no streamlit): its steps, the pronoun it follows, the heads it shows,
the facts its questions are checked against, and the checks themselves.

The lesson follows the textbook chapter: tokens -> one head -> all heads -> what "it"/它 refers
to and which heads link the two -> switch a head off -> what the picture does not tell you.
What the pronoun refers to is never read off the attention (that would be the circle the Caveats
page warns against): the student says it (`check_referent`), and the lesson's own example
sentences carry the answer (`known_referent`). Only then does the lesson look for the heads that
link the two (`find_head`) and say how far above 1/n (a head that looks everywhere equally)
they are, and how many heads are not. Steps 2 and 3 show a head chosen without any referent:
the one whose row for the pronoun is most concentrated on one other token (`look_head`).

A question is checked against the numbers its picture shows: an answer whose value is within a
relative `TIE` of the largest reads the same in the picture and is right too; a wrong answer is
met with a hint first (`hint`) and the right answer only on a second try.

XLM-R's vocabulary (e5-small) joins characters: 因为它 ("because it") is one token, so a word is
found as the token that is it or, for a word outside ASCII, the token that contains it
(`find_word`). Handout HTML: attnviz/lesson_handout.py.

    att = model.attend("动物没有过马路，因为它太累了。")
    q, found = lesson_query(att, "zh")     # the token holding 它
    look = Facts.of(att, look_head(att, q))  # steps 1-3
    k = known_referent(att, "zh", text)    # the example's 动物 (None for a sentence of the student's)
    facts = Facts.of(att, find_head(att, q, k))  # steps 4-6: the heads linking 它 to 动物
    check("tokens", 14, look).right        # True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    "check",
    "check_referent",
    "find_head",
    "find_pronoun",
    "find_word",
    "head_name",
    "hint",
    "known_referent",
    "lesson_query",
    "look_head",
    "referent_choices",
    "step_fields",
]

STEPS = ("tokens", "one_head", "all_heads", "pronoun", "switch_off", "limits")
PRONOUNS: dict[str, tuple[str, ...]] = {
    "en": ("it", "he", "she", "they", "him", "her", "them", "its", "his", "their"),
    "zh": ("它们", "他们", "她们", "它", "他", "她"),
}
SAME_OPTIONS = ("same", "different")  # step 3: do all heads look at the same tokens?
LIMIT_OPTIONS = ("proof", "mix", "nothing")  # step 6: what a weight of the head shows
# Two values within 5 % of each other (relative) look the same in a bar or a cell: either answer
# is right. Relative, never absolute: every cosine distance of a switched-off head can be below
# 0.01, and an absolute margin of 0.01 then made every answer right.
TIE = 0.05
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


def _is_word(token: str) -> bool:
    return any(ch.isalnum() for ch in _bare(token))


def _words(att: Attention) -> list[int]:
    words = [i for i in range(att.n) if not att.special[i] and _is_word(att.tokens[i])]
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
    """The token of what the pronoun refers to, where the lesson knows it: the sentence is one of
    the language's example sentences of the pronoun family ("…because it was tired": the animal),
    whose key word names the referent. None for any other sentence: the student says it."""
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


def find_head(att: Attention, query: int, key: int) -> HeadPick:
    """The (layer, head) whose row for `query` puts the most weight on `key` (the first such
    head, layer by layer, on a tie)."""
    if not (0 <= query < att.n and 0 <= key < att.n):
        raise IndexError(f"query {query} / key {key} outside 0..{att.n - 1}")
    column = np.asarray(att.weights[:, :, query, key], dtype=np.float64)  # (L, H)
    flat = int(np.argmax(column))
    layer, head = divmod(flat, att.n_heads)
    return HeadPick(int(layer), int(head), query, key, float(column[layer, head]), att.n)


def look_head(att: Attention, query: int) -> HeadPick:
    """The head steps 2 and 3 show, chosen without any referent: the one whose row for `query`
    puts the largest single weight on an ordinary token other than the query itself (a head that
    plainly looks somewhere); its `key` is that token."""
    if not 0 <= query < att.n:
        raise IndexError(f"query {query} outside 0..{att.n - 1}")
    others = (
        [i for i in range(att.n) if i != query and not att.special[i]]
        or [i for i in range(att.n) if i != query]
        or [query]
    )
    rows = np.asarray(att.weights[:, :, query, :], dtype=np.float64)[:, :, others]  # (L, H, m)
    best = rows.max(axis=-1)  # (L, H)
    layer, head = divmod(int(np.argmax(best)), att.n_heads)
    key = others[int(np.argmax(rows[layer, head]))]
    return HeadPick(int(layer), int(head), query, key, float(att.weights[layer, head, query, key]), att.n)


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
    def heads_above(self) -> int:
        """How many heads give the key more than 1/n from the query (a head that looks everywhere
        equally gives exactly 1/n)."""
        return int(np.count_nonzero(self.column > self.pick.uniform))

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
    """Whether `answer` reads as the largest of `values` in its picture: it is the largest, or
    within a relative TIE of it (never within an absolute margin: see TIE)."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    if not 0 <= answer < flat.size:
        return False
    top = float(flat.max())
    return answer == int(np.argmax(flat)) or (top > 0 and float(flat[answer]) >= top * (1.0 - TIE))


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


def _same_word(token: str, word: str) -> bool:
    """Whether a token names `word`: it is the word, or (outside ASCII, where XLM-R joins and
    splits characters: 因为它, 动 + 物) holds it or is a piece of it."""
    bare, w = _bare(token), word.strip().lower()
    if not bare or not w:
        return False
    return bare == w or (not w.isascii() and (w in bare or bare in w))


def check_referent(answer: object, tokens: Sequence[str], query: int, known: int | None) -> Verdict:
    """Step 4's first question: what the pronoun refers to. Where the lesson knows it (`known`,
    its own example sentence) the answer is right when it names that word; for a sentence of the
    student's own there is nothing to check it against: their answer is the referent, taken as
    given (a Verdict with right=True and the key "lesson.why.referent_taken")."""
    q = tokens[query]
    if not isinstance(answer, (int, np.integer)) or not 0 <= int(answer) < len(tokens):
        return Verdict(False, "lesson.why.referent", {"q": q, "k": tokens[known] if known is not None else ""})
    if known is None:
        return Verdict(True, "lesson.why.referent_taken", {"q": q, "k": tokens[int(answer)]})
    k = tokens[known]
    right = int(answer) == known or _same_word(tokens[int(answer)], _bare(k))
    return Verdict(right, "lesson.why.referent", {"q": q, "k": k})


def hint(step: str, facts: Facts) -> Verdict:
    """What a first wrong answer is told: where to look, without the answer (the answer comes with
    a second wrong try, `check`'s why). `step` may be "referent" as well as one of STEPS."""
    if step not in (*STEPS, "referent"):
        raise ValueError(f"unknown step {step!r}")
    fields = {"q": facts.query_token}
    if step in ("pronoun", "switch_off", "limits"):
        fields["k"] = facts.key_token
    return Verdict(False, f"lesson.hint.{step}", fields)


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
        "heads": str(facts.column.size),
        "above": str(facts.heads_above),
        "below": str(facts.column.size - facts.heads_above),
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
