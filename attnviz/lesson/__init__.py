"""The guided lesson: six steps on the visitor's own sentence, each with a question checked against
the sentence's own numbers, and a printable handout (lesson/handout.py). What the pronoun refers to
is never read off the attention (the circle the Caveats page warns against): the student says it
(`check_referent`) or the lesson's own example knows it (`known_referent`); only then does the
lesson look for the heads that link the two (`find_head`).

    att = model.attend("动物没有过马路，因为它太累了。")
    q, found = lesson_query(att, "zh")     # the token holding 它
    look = Facts.of(att, look_head(att, q))  # steps 1-3
    k = known_referent(att, "zh", text)    # the example's 动物 (None for a sentence of the student's)
    facts = Facts.of(att, find_head(att, q, k))  # steps 4-6: the heads linking 它 to 动物
    check("tokens", 14, look).right        # True
"""

from .checks import TIE, Verdict, answer_label, check, check_referent, hint, step_fields
from .core import (
    LIMIT_OPTIONS,
    PRONOUNS,
    SAME_OPTIONS,
    STEPS,
    Facts,
    HeadPick,
    find_head,
    find_pronoun,
    find_word,
    head_name,
    known_referent,
    lesson_query,
    look_head,
    referent_choices,
)

__all__ = [
    "LIMIT_OPTIONS",
    "PRONOUNS",
    "SAME_OPTIONS",
    "STEPS",
    "TIE",
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
