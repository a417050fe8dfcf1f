"""The class store: what a teacher starts and changes, who joins, every checked answer. One store
a process (the app's server wing keeps it); every method is one short transaction, so a page says
"saved" only once the database holds the answer (the package's docstring shows a class's calls).

A teacher action takes the secret (checked against its digest in constant time: codes.matches);
a student action takes the student's token and reaches only that student's rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..lesson.core import STEPS
from . import codes
from .engine import make_engine, migrate
from .schema import AnswerRow, ClassRow, StudentRow

__all__ = ["Answer", "ClassInfo", "ClassSpec", "ClassStore", "Given", "Refused", "Started", "Student"]

QUESTIONS = (*STEPS[:3], "referent", *STEPS[3:])  # in the order the lesson asks them
SENTENCE_KEPT = 500  # characters of the sentence kept with an answer (the URL's own limit)


class Refused(Exception):
    """A request the class cannot take; `reason`: "unknown" (no such class or student), "secret",
    "ended", "full", "closed" (the step is closed), "too_fast" (past the answer rate), "bad"."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ClassSpec:
    title: str
    lang: str
    sentences: Mapping[str, tuple[str, str]]  # language -> (sentence, model)
    own_sentence: bool = False
    open_steps: tuple[str, ...] = STEPS
    max_students: int = 60


@dataclass(frozen=True, kw_only=True)
class ClassInfo(ClassSpec):
    """A class as stored: what the teacher asked for, its code, when it started and ended."""

    code: str
    created_at: datetime
    ended_at: datetime | None

    @property
    def ended(self) -> bool:
        return self.ended_at is not None

    def sentence(self, lang: str) -> tuple[str, str]:
        return self.sentences.get(lang) or self.sentences[self.lang]


@dataclass(frozen=True)
class Started:
    info: ClassInfo
    secret: str


@dataclass(frozen=True)
class Student:
    number: int
    name: str  # "" when none was given: the page says "student 7"
    lang: str
    joined_at: datetime


@dataclass(frozen=True)
class Given:
    """A checked answer as the lesson page gives it."""

    step: str
    answer: str
    right: bool
    told_key: str
    told_fields: Mapping[str, str] = field(default_factory=dict)
    sentence: str = ""


@dataclass(frozen=True)
class Answer:
    number: int  # the student's
    step: str
    answer: str
    right: bool
    told_key: str
    told_fields: Mapping[str, str]
    sentence: str
    at: datetime


def step_of(question: str) -> str:
    """The lesson step a question belongs to (the referent is asked within the pronoun step)."""
    return "pronoun" if question == "referent" else question


def _utc(value: datetime) -> datetime:
    # SQLite gives back naive datetimes: they were written in UTC
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _now() -> datetime:
    return datetime.now(UTC)


def _info(row: ClassRow) -> ClassInfo:
    return ClassInfo(
        code=row.code,
        title=row.title,
        lang=row.lang,
        sentences={"en": (row.sentence_en, row.model_en), "zh": (row.sentence_zh, row.model_zh)},
        own_sentence=bool(row.own_sentence),
        open_steps=tuple(s for s in row.open_steps.split(",") if s in STEPS),
        max_students=row.max_students,
        created_at=_utc(row.created_at),
        ended_at=row.ended_at and _utc(row.ended_at),
    )


def _student(row: StudentRow) -> Student:
    return Student(row.number, row.name, row.lang, _utc(row.joined_at))


def _answer(a: AnswerRow, number: int) -> Answer:
    return Answer(
        number, a.step, a.answer, bool(a.right), a.told_key, json.loads(a.told_fields), a.sentence, _utc(a.at)
    )


class ClassStore:
    """`url`: a SQLAlchemy URL (engine.database_url). `answers_per_minute`: the most answers one
    student may give in a minute. `clock`: the time (tests move it for the retention)."""

    def __init__(self, url: str, *, answers_per_minute: int = 30, clock: Callable[[], datetime] = _now) -> None:
        self.engine = make_engine(url)
        migrate(self.engine)
        self.answers_per_minute = answers_per_minute
        self.clock = clock

    def close(self) -> None:
        self.engine.dispose()

    def _session(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    # --- the teacher ---

    def create(self, spec: ClassSpec) -> Started:
        title = codes.clean_name(spec.title, codes.TITLE_MAX)
        steps = ",".join(s for s in STEPS if s in spec.open_steps)
        en, zh = spec.sentences.get("en"), spec.sentences.get("zh")
        en, zh = en or zh, zh or en  # one language's sentence stands in for the other's
        if en is None or zh is None:
            raise Refused("bad")
        secret = codes.new_secret()
        for _ in range(8):  # a code already taken: draw again (887 million codes)
            row = ClassRow(
                code=codes.new_code(), secret_digest=codes.digest(secret), title=title, lang=spec.lang,
                sentence_en=en[0], model_en=en[1], sentence_zh=zh[0], model_zh=zh[1],
                own_sentence=spec.own_sentence, open_steps=steps, max_students=max(1, spec.max_students),
                created_at=self.clock(), ended_at=None,
            )  # fmt: skip
            try:
                with self._session() as s, s.begin():
                    s.add(row)
                return Started(_info(row), secret)
            except IntegrityError:
                continue
        raise RuntimeError("no free class code after 8 draws")

    def _class(self, s: Session, code: object, lock: bool = False) -> ClassRow:
        """The class of `code`; `lock`: its row locked to the transaction's end (PostgreSQL; SQLite's
        BEGIN IMMEDIATE has already locked the database), so joins count and number one at a time."""
        code = codes.read_code(code)
        query = select(ClassRow).where(ClassRow.code == code)
        row = None if code is None else s.scalar(query.with_for_update() if lock else query)
        if row is None:
            raise Refused("unknown")
        return row

    @contextmanager
    def _teacher(self, code: object, secret: object) -> Iterator[tuple[Session, ClassRow]]:
        """A transaction on the class of `code`, once `secret` is its teacher's."""
        with self._session() as s, s.begin():
            row = self._class(s, code)
            if not codes.matches(secret, row.secret_digest):
                raise Refused("secret")
            yield s, row

    def teacher(self, code: object, secret: object) -> ClassInfo:
        with self._teacher(code, secret) as (_, row):
            return _info(row)

    def set_open_steps(self, code: object, secret: object, steps: tuple[str, ...]) -> ClassInfo:
        with self._teacher(code, secret) as (_, row):
            row.open_steps = ",".join(x for x in STEPS if x in steps)
            return _info(row)

    def end(self, code: object, secret: object) -> ClassInfo:
        with self._teacher(code, secret) as (_, row):
            if row.ended_at is None:
                row.ended_at = self.clock()
            return _info(row)

    def delete(self, code: object, secret: object) -> None:
        with self._teacher(code, secret) as (s, row):
            self._delete(s, row.id)

    def _delete(self, s: Session, class_id: int) -> None:
        # explicitly, children first: the cascade does it too, but not on a SQLite connection opened elsewhere without foreign keys
        s.execute(delete(AnswerRow).where(AnswerRow.class_id == class_id))
        s.execute(delete(StudentRow).where(StudentRow.class_id == class_id))
        s.execute(delete(ClassRow).where(ClassRow.id == class_id))

    def purge(self, retention_days: int) -> int:
        """Delete the classes started more than `retention_days` ago; how many."""
        cutoff = self.clock() - timedelta(days=retention_days)
        with self._session() as s, s.begin():
            ids = list(s.scalars(select(ClassRow.id).where(ClassRow.created_at < cutoff)))
            for class_id in ids:
                self._delete(s, class_id)
        return len(ids)

    def students(self, code: object, secret: object) -> list[Student]:
        with self._teacher(code, secret) as (s, row):
            query = select(StudentRow).where(StudentRow.class_id == row.id).order_by(StudentRow.number)
            return [_student(r) for r in s.scalars(query)]

    def answers(self, code: object, secret: object) -> list[Answer]:
        with self._teacher(code, secret) as (s, row):
            return self._answers(s, row.id)

    def handout(self, code: object, secret: object, number: int) -> str | None:
        with self._teacher(code, secret) as (s, row):
            query = select(StudentRow.handout).where(StudentRow.class_id == row.id, StudentRow.number == number)
            return s.scalar(query)

    def _answers(self, s: Session, class_id: int, student_id: int | None = None) -> list[Answer]:
        query = (
            select(AnswerRow, StudentRow.number)
            .join(StudentRow, StudentRow.id == AnswerRow.student_id)
            .where(AnswerRow.class_id == class_id)
            .order_by(AnswerRow.id)
        )
        if student_id is not None:
            query = query.where(AnswerRow.student_id == student_id)
        return [_answer(a, number) for a, number in s.execute(query)]

    # --- a student ---

    def find(self, code: object) -> ClassInfo | None:
        """The class's public side (no secret), or None."""
        with self._session() as s, s.begin():
            try:
                return _info(self._class(s, code))
            except Refused:
                return None

    def join(self, code: object, name: object, lang: str) -> tuple[Student, str]:
        token = codes.new_token()
        for _ in range(5):  # the unique key is the last guard of the numbering: a clash draws again
            try:
                with self._session() as s, s.begin():
                    row = self._class(s, code, lock=True)
                    if row.ended_at is not None:
                        raise Refused("ended")
                    count = s.scalar(select(func.count()).where(StudentRow.class_id == row.id)) or 0
                    if count >= row.max_students:
                        raise Refused("full")
                    last = s.scalar(select(func.max(StudentRow.number)).where(StudentRow.class_id == row.id)) or 0
                    student = StudentRow(
                        class_id=row.id, token_digest=codes.digest(token), number=last + 1,
                        name=codes.clean_name(name), lang=lang[:8], joined_at=self.clock(),
                    )  # fmt: skip
                    s.add(student)
                return _student(student), token
            except IntegrityError:
                continue
        raise Refused("full")

    @contextmanager
    def _me(self, code: object, token: object) -> Iterator[tuple[Session, ClassRow, StudentRow]]:
        """A transaction on the class of `code` and its student whose token is `token`."""
        with self._session() as s, s.begin():
            row = self._class(s, code)
            token = codes.read_token(token)
            query = select(StudentRow).where(StudentRow.token_digest == codes.digest(token or ""))
            me = None if token is None else s.scalar(query)
            if me is None or me.class_id != row.id:
                raise Refused("unknown")
            yield s, row, me

    def student(self, code: object, token: object) -> tuple[ClassInfo, Student] | None:
        try:
            with self._me(code, token) as (_, row, me):
                return _info(row), _student(me)
        except Refused:
            return None

    def own_answers(self, code: object, token: object) -> list[Answer]:
        with self._me(code, token) as (s, row, me):
            return self._answers(s, row.id, me.id)

    def record(self, code: object, token: object, given: Given) -> Answer:
        """Keep one checked answer (committed when this returns), or Refused."""
        if given.step not in QUESTIONS:
            raise Refused("bad")
        with self._me(code, token) as (s, row, me):
            if row.ended_at is not None:
                raise Refused("ended")
            if step_of(given.step) not in row.open_steps.split(","):
                raise Refused("closed")
            now = self.clock()
            recent = select(func.count()).where(
                AnswerRow.student_id == me.id, AnswerRow.at > now - timedelta(minutes=1)
            )
            if (s.scalar(recent) or 0) >= self.answers_per_minute:
                raise Refused("too_fast")
            fields = {str(k)[:20]: str(v)[:200] for k, v in list(given.told_fields.items())[:12]}
            answer = AnswerRow(
                class_id=row.id, student_id=me.id, step=given.step, answer=given.answer[:200], right=bool(given.right),
                told_key=given.told_key[:80], told_fields=json.dumps(fields, ensure_ascii=False),
                sentence=given.sentence[:SENTENCE_KEPT], at=now,
            )  # fmt: skip
            s.add(answer)
        return _answer(answer, me.number)

    def save_handout(self, code: object, token: object, page: str, limit: int = 2_000_000) -> None:
        """Keep the student's latest handout page for the teacher (at most `limit` characters)."""
        with self._me(code, token) as (_, _row, me):
            me.handout = page[:limit]
