"""A class in session: a teacher starts a class, students join by its code, every checked answer
of the lesson is kept, and the teacher's dashboard reads them (SQL through SQLAlchemy 2, versioned
migrations through Alembic; SQLite by default, PostgreSQL by URL). No streamlit here: the app's
pages (app/sections/classroom*.py) and its server wing (app/server/classes.py) use it.

    store = ClassStore(database_url(settings.database_url, settings.data_dir))
    started = store.create(ClassSpec("Period 3", "en", {"en": (sentence, "minilm")}))
    student, token = store.join(started.info.code, "Ana", "en")
    store.record(code, token, Given("tokens", "14", True, "lesson.why.tokens", {...}, sentence))
    board = summarise(store.students(code, secret), store.answers(code, secret), info.open_steps)
"""

from .codes import ALPHABET, clean_name, read_code, read_token
from .engine import database_url, make_engine, migrate
from .store import QUESTIONS, Answer, ClassInfo, ClassSpec, ClassStore, Given, Refused, Started, Student
from .summary import CSV_COLUMNS, Board, Question, Row, results_csv, student_label, summarise

__all__ = [
    "ALPHABET",
    "CSV_COLUMNS",
    "QUESTIONS",
    "Answer",
    "Board",
    "ClassInfo",
    "ClassSpec",
    "ClassStore",
    "Given",
    "Question",
    "Refused",
    "Row",
    "Started",
    "Student",
    "clean_name",
    "database_url",
    "make_engine",
    "migrate",
    "read_code",
    "read_token",
    "results_csv",
    "student_label",
    "summarise",
]
