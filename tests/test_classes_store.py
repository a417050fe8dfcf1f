"""The class store on SQLite and on PostgreSQL (tests/classes_db.py): a migration from an empty
database gives the tables attnviz/classes/schema.py declares; a class keeps what its teacher and
students did; only the teacher's secret reads the class, only a student's token that student's
answers; the refusals (ended, full, closed step, too fast); retention; many joining at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import create_engine, inspect, text

from attnviz.classes import ClassSpec, ClassStore, Given, Refused, database_url, summarise
from attnviz.classes.codes import ALPHABET, digest
from attnviz.classes.schema import Base

from .classes_db import postgres_database

SENTENCE = "The teacher thanked the student because she had helped."


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield database_url("", str(tmp_path))
    else:
        with postgres_database() as url:
            yield url


@pytest.fixture
def store(db_url: str) -> Iterator[ClassStore]:
    s = ClassStore(db_url)
    yield s
    s.close()


def _given(step: str, answer: str, right: bool) -> Given:
    return Given(
        step, answer, right, "lesson.hint.tokens" if not right else "lesson.why.tokens", {"q": "she"}, SENTENCE
    )


def _class(store: ClassStore, **kw):
    return store.create(
        ClassSpec(
            "Period 3", "en", {"en": (SENTENCE, "minilm"), "zh": ("小明谢谢老师，因为他帮了忙。", "e5-small")}, **kw
        )
    )


def test_a_migration_from_empty_gives_the_declared_tables(db_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    ClassStore(db_url).close()
    engine = create_engine(db_url)
    with engine.connect() as c:
        diff = compare_metadata(
            MigrationContext.configure(c, opts={"version_table": "attnviz_classes_version"}), Base.metadata
        )
        version = c.execute(text("SELECT version_num FROM attnviz_classes_version")).scalar()
        tables = set(inspect(c).get_table_names())
    engine.dispose()
    # names of unique constraints differ by dialect; everything else must match
    assert [d for d in diff if not (isinstance(d, tuple) and "unique" in d[0])] == []
    assert version == "0001"
    assert tables >= {"classes", "students", "answers"}


def test_opening_twice_migrates_once_and_keeps_the_data(db_url: str) -> None:
    first = ClassStore(db_url)
    started = _class(first)
    first.close()
    again = ClassStore(db_url)
    assert again.teacher(started.info.code, started.secret).title == "Period 3"
    again.close()


def test_a_class_keeps_its_students_and_answers(store: ClassStore) -> None:
    started = _class(store)
    code, secret = started.info.code, started.secret
    assert len(code) == 6 and set(code) <= set(ALPHABET)
    assert len(secret) >= 22  # 128 bits and more as base64url
    ana, ana_token = store.join(code, "Ana", "en")
    bo, bo_token = store.join(code.lower(), "", "zh")  # typed in lower case
    assert (ana.number, bo.number, bo.name) == (1, 2, "")
    store.record(code, ana_token, _given("tokens", "13", False))
    store.record(code, ana_token, _given("tokens", "14", True))
    store.record(code, bo_token, _given("tokens", "13", False))
    answers = store.answers(code, secret)
    assert [(a.number, a.answer, a.right) for a in answers] == [(1, "13", False), (1, "14", True), (2, "13", False)]
    board = summarise(store.students(code, secret), answers, started.info.open_steps)
    tokens = board.questions[0]
    assert (tokens.step, tokens.answered, tokens.right, tokens.wrong_answer, tokens.wrong_count) == (
        "tokens",
        2,
        1,
        "13",
        2,
    )
    assert tokens.told == ("lesson.hint.tokens", {"q": "she"})
    assert [r.at for r in board.rows] == ["one_head", "tokens"]
    # a student reads back their own answers only
    assert [a.number for a in store.own_answers(code, bo_token)] == [2]


def test_only_the_secret_opens_the_teacher_side(store: ClassStore) -> None:
    a, b = _class(store), _class(store)
    _student, token = store.join(a.info.code, "Ana", "en")
    for wrong in (
        b.secret,
        token,
        "",
        None,
        a.secret[:-1] + ("A" if a.secret[-1] != "A" else "B"),
        a.secret + "x" * 100,
    ):
        for action in (store.teacher, store.answers, store.students, store.end, store.delete):
            with pytest.raises(Refused) as refused:
                action(a.info.code, wrong)
            assert refused.value.reason in ("secret", "unknown")
    with pytest.raises(Refused):
        store.own_answers(b.info.code, token)  # a token of another class
    assert store.teacher(a.info.code, a.secret).code == a.info.code


def test_secrets_and_tokens_are_kept_as_digests_only(store: ClassStore, db_url: str) -> None:
    started = _class(store)
    _student, token = store.join(started.info.code, "Ana", "en")
    engine = create_engine(db_url)
    with engine.connect() as c:
        rows = [*c.execute(text("SELECT * FROM classes")), *c.execute(text("SELECT * FROM students"))]
    engine.dispose()
    flat = " ".join(str(v) for row in rows for v in row)
    assert started.secret not in flat and token not in flat
    assert digest(started.secret) in flat and digest(token) in flat


def test_refusals_ended_full_closed_and_too_fast(db_url: str) -> None:
    store = ClassStore(db_url, answers_per_minute=3)
    started = _class(store, max_students=2, open_steps=("tokens", "one_head"))
    code, secret = started.info.code, started.secret
    _s1, t1 = store.join(code, "a", "en")
    store.join(code, "b", "en")
    with pytest.raises(Refused, match="full"):
        store.join(code, "c", "en")
    with pytest.raises(Refused, match="closed"):
        store.record(code, t1, _given("all_heads", "same", True))
    with pytest.raises(Refused, match="closed"):
        store.record(code, t1, _given("referent", "3: she", True))  # step 4's first question
    for answer in ("1", "2", "3"):
        store.record(code, t1, _given("tokens", answer, False))
    with pytest.raises(Refused, match="too_fast"):
        store.record(code, t1, _given("tokens", "4", False))
    store.set_open_steps(code, secret, ("tokens", "one_head", "all_heads"))
    store.clock = lambda: datetime.now(UTC) + timedelta(minutes=2)  # a minute later the rate allows again
    store.record(code, t1, _given("all_heads", "same", True))
    store.end(code, secret)
    with pytest.raises(Refused, match="ended"):
        store.record(code, t1, _given("one_head", "2: cat", True))
    with pytest.raises(Refused, match="ended"):
        store.join(code, "late", "en")
    assert store.find(code).ended and len(store.answers(code, secret)) == 4
    store.close()


def test_retention_and_deletion_remove_every_row(store: ClassStore, db_url: str) -> None:
    old, new, gone = _class(store), _class(store), _class(store)
    for started in (old, new, gone):
        _s, token = store.join(started.info.code, "x", "en")
        store.record(started.info.code, token, _given("tokens", "1", False))
    engine = create_engine(db_url)
    with engine.begin() as c:
        c.execute(text("UPDATE classes SET created_at = :t WHERE code = :c"),
                  {"t": datetime.now(UTC) - timedelta(days=31), "c": old.info.code})  # fmt: skip
    store.delete(gone.info.code, gone.secret)
    assert store.purge(30) == 1
    assert store.find(old.info.code) is None and store.find(gone.info.code) is None
    with engine.connect() as c:
        counts = [c.execute(text(f"SELECT count(*) FROM {t}")).scalar() for t in ("classes", "students", "answers")]
    engine.dispose()
    assert counts == [1, 1, 1]


def test_thirty_join_at_once_with_distinct_numbers(store: ClassStore) -> None:
    started = _class(store)
    numbers: list[int] = []
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            student, token = store.join(started.info.code, f"s{i}", "en")
            store.record(started.info.code, token, _given("tokens", str(i), False))
            numbers.append(student.number)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(30)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == [] and sorted(numbers) == list(range(1, 31))
    assert len(store.answers(started.info.code, started.secret)) == 30


KILLED_AFTER_SAVING = """
import os, signal, sys
from attnviz.classes import ClassSpec, ClassStore, Given
store = ClassStore(sys.argv[1])
started = store.create(ClassSpec("killed", "en", {"en": ("It rained because it was cold.", "minilm")}))
_student, token = store.join(started.info.code, "Ana", "en")
store.record(started.info.code, token, Given("tokens", "9", True, "lesson.why.tokens", {}, "x"))
print(started.info.code, started.secret, flush=True)  # what the page calls "saved"
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_an_answer_saved_survives_the_process_killed(db_url: str) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_SAVING, db_url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == -9, done.stderr
    code, secret = done.stdout.split()
    store = ClassStore(db_url)
    assert [(a.step, a.answer, a.right) for a in store.answers(code, secret)] == [("tokens", "9", True)]
    store.close()
