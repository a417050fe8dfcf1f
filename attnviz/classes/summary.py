"""What the dashboard shows, from the store's rows (pure): each question's counts and its most
common wrong answer with what the page told it, where each student is, the students-by-steps
grid, and the results as CSV (every cell formula-safe: export/csv_cells.py).

    board = summarise(students, answers, info.open_steps)
    board.questions[0].answered, .right, .wrong_answer, .wrong_count, .told
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .. import i18n
from ..export.csv_cells import csv_cell
from .store import QUESTIONS, Answer, Student, step_of

__all__ = ["CSV_COLUMNS", "Board", "Question", "Row", "results_csv", "student_label", "summarise"]

CSV_COLUMNS = ("class", "student", "name", "step", "answer", "right", "told", "sentence", "time")
# the grid's marks: right (at some try), only wrong so far, not answered
RIGHT, WRONG, NONE = "✓", "✗", "–"


@dataclass(frozen=True)
class Question:
    step: str
    answered: int  # students who answered it at least once
    right: int  # students who got it right at some try
    wrong_answer: str | None  # the wrong answer given most often (ties: the one given first)
    wrong_count: int
    told: tuple[str, dict[str, str]] | None  # what the page told the latest student who gave it


@dataclass(frozen=True)
class Row:
    student: Student
    at: str  # the question they are on: the first open one not yet right; "done" when none is left
    marks: tuple[str, ...]  # one a question, in QUESTIONS order


@dataclass(frozen=True)
class Board:
    questions: tuple[Question, ...]
    rows: tuple[Row, ...]
    answers: int


def student_label(student: Student, lang: str) -> str:
    """The name the student gave, or "student 7"; visitor text either way (escape where it lands)."""
    return student.name or i18n.t("class.student_n", lang, n=student.number)


def _question(step: str, given: Sequence[Answer]) -> Question:
    mine = [a for a in given if a.step == step]
    wrong = [a for a in mine if not a.right]
    # most_common orders equal counts by first appearance: ties go to the answer given first
    top, n = Counter(a.answer for a in wrong).most_common(1)[0] if wrong else (None, 0)
    told = next(((a.told_key, dict(a.told_fields)) for a in reversed(wrong) if a.answer == top), None)
    return Question(
        step,
        answered=len({a.number for a in mine}),
        right=len({a.number for a in mine if a.right}),
        wrong_answer=top,
        wrong_count=n,
        told=told,
    )


def summarise(students: Sequence[Student], answers: Sequence[Answer], open_steps: Sequence[str]) -> Board:
    questions = tuple(_question(q, answers) for q in QUESTIONS)
    rows = []
    for student in students:
        mine = [a for a in answers if a.number == student.number]
        right = {a.step for a in mine if a.right}
        tried = {a.step for a in mine}
        marks = tuple(RIGHT if q in right else WRONG if q in tried else NONE for q in QUESTIONS)
        at = next((q for q in QUESTIONS if step_of(q) in open_steps and q not in right), "done")
        rows.append(Row(student, at, marks))
    return Board(questions, tuple(rows), len(answers))


def results_csv(code: str, students: Sequence[Student], answers: Sequence[Answer], lang: str) -> str:
    """Every answer a row (CSV_COLUMNS), the page's message in `lang`, every cell formula-safe."""
    names = {s.number: student_label(s, lang) for s in students}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for a in answers:
        told = i18n.t(a.told_key, lang, **a.told_fields) if a.told_key else ""
        cells = (code, str(a.number), names.get(a.number, ""), a.step, a.answer, "1" if a.right else "0", told,
                 a.sentence, a.at.isoformat(timespec="seconds"))  # fmt: skip
        writer.writerow([csv_cell(c) for c in cells])
    return out.getvalue()
