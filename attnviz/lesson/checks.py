"""The lesson's checks: each answer against the numbers its picture shows (`check`), the
referent (`check_referent`), a first wrong answer's hint (`hint`), the steps' text fields. A
wrong answer gets a hint first and the right answer only on a second try.

    verdict = check("tokens", 14, facts)
    verdict.right, verdict.why("zh")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .. import i18n
from .core import STEPS, Facts, _bare, head_name

# Values within 5 % of each other look the same in a bar or a cell: either answer is right.
# Relative: a switched-off head's cosine distances can all be below an absolute margin.
TIE = 0.05


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


def _near_top(values: np.ndarray, answer: int | None) -> bool:
    """Whether `answer` reads as the largest of `values`: it is, or is within a relative TIE."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    if answer is None or not 0 <= answer < flat.size:
        return False
    top = float(flat.max())
    return answer == int(np.argmax(flat)) or (top > 0 and float(flat[answer]) >= top * (1.0 - TIE))


def check(step: str, answer: object, facts: Facts, lang: str = i18n.DEFAULT_LANGUAGE) -> Verdict:
    """Check the visitor's answer to `step`'s question against the facts of their sentence.
    Answers: "tokens" an int (how many tokens); "one_head" and "switch_off" a token index;
    "all_heads" one of SAME_OPTIONS; "pronoun" a head as layer * n_heads + head; "limits" one of
    LIMIT_OPTIONS. A reading of a picture is right when its value is within TIE of the largest."""
    p, f = facts.pick, facts
    q, k, head = f.query_token, f.key_token, head_name(p.layer, p.head, lang)
    index = int(answer) if isinstance(answer, (int, np.integer)) else None
    if step == "tokens":
        specials = sum(f.special)
        fields = {"n": str(f.n), "special": str(specials), "text": str(f.n - specials)}
        return Verdict(index == f.n, "lesson.why.tokens", fields)
    if step == "one_head":
        top = int(np.argmax(f.row))
        fields = {"q": q, "top": f.tokens[top], "w": _pct(f.row[top]), "head": head}
        return Verdict(_near_top(f.row, index), "lesson.why.one_head", fields)
    if step == "all_heads":
        expected = "different" if f.distinct_tops > 1 else "same"
        fields = {"q": q, "heads": str(f.column.size), "k": str(f.distinct_tops)}
        return Verdict(answer == expected, f"lesson.why.all_heads_{expected}", fields)
    if step == "pronoun":
        shown = step_fields(f, lang)  # the step's own text states the same weight, n and 1/n
        fields = {name: shown[name] for name in ("q", "k", "head", "w", "n", "u")} | {"ratio": f"{p.ratio:.1f}"}
        key = "lesson.why.pronoun" if p.above_uniform else "lesson.why.pronoun_below"
        return Verdict(_near_top(f.column, index), key, fields)
    if step == "switch_off":
        if f.distances is None:
            return Verdict(False, "lesson.why.switch_off_none", {})
        top = int(np.argmax(f.distances))
        fields = {
            "head": head,
            "top": f.tokens[top],
            "d": f"{f.distances[top]:.3f}",
            "s": f"{f.sentence_distance or 0.0:.4f}",
        }
        return Verdict(_near_top(f.distances, index), "lesson.why.switch_off", fields)
    if step == "limits":
        norm = "—" if f.norm_row is None else _pct(f.norm_row[p.key])
        return Verdict(answer == "mix", "lesson.why.limits", {"q": q, "k": k, "w": _pct(p.weight), "norm": norm})
    raise ValueError(f"unknown step {step!r}; the steps are {', '.join(STEPS)}")


def _same_word(token: str, word: str) -> bool:
    """Whether a token names `word`: it is the word, or outside ASCII holds it or is a piece of
    it (XLM-R: 因为它, 动 + 物)."""
    bare, w = _bare(token), word.strip().lower()
    if not bare or not w:
        return False
    return bare == w or (not w.isascii() and (w in bare or bare in w))


def check_referent(answer: object, tokens: Sequence[str], query: int, known: int | None) -> Verdict:
    """Step 4's first question: what the pronoun refers to. Right when it names `known`; with no
    `known` (the student's own sentence) the answer is taken as given ("referent_taken")."""
    q = tokens[query]
    if not isinstance(answer, (int, np.integer)) or not 0 <= int(answer) < len(tokens):
        return Verdict(False, "lesson.why.referent", {"q": q, "k": tokens[known] if known is not None else ""})
    if known is None:
        return Verdict(True, "lesson.why.referent_taken", {"q": q, "k": tokens[int(answer)]})
    k = tokens[known]
    right = int(answer) == known or _same_word(tokens[int(answer)], _bare(k))
    return Verdict(right, "lesson.why.referent", {"q": q, "k": k})


def hint(step: str, facts: Facts) -> Verdict:
    """What a first wrong answer is told: where to look, not the answer. `step`: one of STEPS
    or "referent"."""
    if step not in (*STEPS, "referent"):
        raise ValueError(f"unknown step {step!r}")
    fields = {"q": facts.query_token}
    if step in ("pronoun", "switch_off", "limits"):
        fields["k"] = facts.key_token
    return Verdict(False, f"lesson.hint.{step}", fields)


def step_fields(facts: Facts, lang: str) -> dict[str, str]:
    """The fields of the steps' texts; the query and key tokens are visitor text to escape."""
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
    if step in ("one_head", "switch_off", "referent") and isinstance(value, (int, np.integer)) and 0 <= value < facts.n:
        return f"{int(value)}: {facts.tokens[int(value)]}"
    if step == "pronoun" and isinstance(value, (int, np.integer)):
        layer, head = divmod(int(value), facts.column.shape[1])
        return head_name(layer, head, lang)
    if step in ("all_heads", "limits"):
        return i18n.t(f"lesson.opt.{value}", lang)
    return str(value)
