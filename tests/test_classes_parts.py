"""The pieces of a class around its store: codes, names and secrets as a visitor sends them, the
bound on wrong tries, the results CSV (formula-safe, one row an answer), the class keys kept in a
student's link and out of a share link, the settings."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest

from attnviz.app import urls
from attnviz.app.server.classes import VISITORS_MAX, Throttle
from attnviz.classes import ALPHABET, Answer, Student, clean_name, read_code, read_token, results_csv
from attnviz.classes.codes import digest, matches, new_code, new_secret, new_token
from attnviz.config import settings_from_env
from attnviz.export.csv_cells import csv_uncell


def test_codes_use_no_look_alikes_and_read_as_typed() -> None:
    assert not set("0O1IL") & set(ALPHABET)
    codes = {new_code() for _ in range(2000)}
    assert len(codes) > 1990 and all(len(c) == 6 and set(c) <= set(ALPHABET) for c in codes)
    assert read_code(" ab3-k7q ") == "AB3K7Q"
    for bad in ("AB3K7", "AB3K7QQ", "AB0K7Q", "ABIK7Q", "", None, 123456, "A" * 10_000):
        assert read_code(bad) is None


def test_secrets_have_the_bits_asked_and_match_only_themselves() -> None:
    secret, token = new_secret(), new_token()
    assert len(secret) * 6 >= 190 and len(token) * 6 >= 128  # base64url: 6 bits a character
    assert matches(secret, digest(secret)) and not matches(token, digest(secret))
    for bad in (secret + " ", secret[:-1], "", None, 5, "<script>" + secret, "x" * 10_000):
        assert not matches(bad, digest(secret))
    assert read_token(token) == token and read_token("a/b" * 8) is None


def test_names_lose_control_and_bidi_characters_and_stay_short() -> None:
    assert clean_name("  Ana\u202e\u2066 María\n\t \x00 ") == "Ana María"
    assert clean_name("x" * 500) == "x" * 40
    assert clean_name("\u200b\u202e") == "" and clean_name(None) == ""
    assert clean_name("<script>alert(1)</script>") == "<script>alert(1)</script>"  # text: escaped where shown


def test_wrong_tries_are_free_then_wait_longer_each_time() -> None:
    now = [0.0]
    throttle = Throttle(free=5, most=300, clock=lambda: now[0])
    waits = [throttle.wrong("v") for _ in range(8)]
    assert waits == [0, 0, 0, 0, 1, 2, 4, 8]
    assert throttle.wait("v") == 8 and throttle.wait("other") == 0
    now[0] = 8.0
    assert throttle.wait("v") == 0
    assert max(throttle.wrong("v") for _ in range(20)) == 300
    throttle.right("v")
    assert throttle.wait("v") == 0 and throttle.wrong("v") == 0


def test_the_visitors_table_is_bounded() -> None:
    throttle = Throttle()
    for i in range(VISITORS_MAX + 50):
        throttle.wrong(f"v{i}")
    assert len(throttle._book) == VISITORS_MAX


def test_the_results_csv_holds_every_answer_formula_safe() -> None:
    at = datetime(2026, 12, 6, 9, 30, tzinfo=UTC)
    students = [Student(1, '=HYPERLINK("http://x","y")', "en", at), Student(2, "", "zh", at)]
    answers = [
        Answer(1, "tokens", "+13", False, "lesson.hint.tokens", {}, "@SUM(A1) it was", at),
        Answer(
            2,
            "one_head",
            "3: -它",
            True,
            "lesson.why.one_head",
            {"q": "=它", "top": "x", "w": "5%", "head": "L0 H1"},
            "s",
            at,
        ),
    ]
    rows = list(csv.reader(io.StringIO(results_csv("AB3K7Q", students, answers, "en"))))
    assert rows[0] == ["class", "student", "name", "step", "answer", "right", "told", "sentence", "time"]
    assert len(rows) == 3
    for row in rows[1:]:
        assert not any(cell[:1] in "=+-@" for cell in row)
    assert csv_uncell(rows[1][2]) == students[0].name and rows[2][2] == "student 2"
    assert csv_uncell(rows[1][4]) == "+13" and csv_uncell(rows[1][7]) == "@SUM(A1) it was"
    assert rows[1][5:7] == [
        "0",
        "Count every piece in the box below, the special tokens at the start and the end included. Try once more.",
    ]


def test_a_students_link_keeps_its_class_keys_and_a_share_link_never_carries_them() -> None:
    params = {"text": "hi", "class": "AB3K7Q", "student": "t" * 22, "teacher": "s" * 32, "join": "AB3K7Q", "evil": "1"}
    link = urls.parse_link(params, 1000)
    assert urls.unused_params(params, link) == ["evil"]
    assert {"join", "class", "student", "teacher"} == urls.CLASS_KEYS


def test_class_settings_from_the_environment(tmp_path) -> None:
    s = settings_from_env({"ATTNVIZ_DATA_DIR": str(tmp_path), "ATTNVIZ_CLASS_RETENTION_DAYS": "7"})
    assert (s.classes, s.data_dir, s.class_retention_days, s.class_max_students) == (True, str(tmp_path), 7, 200)
    demo = settings_from_env({"ATTNVIZ_DEMO": "1"})
    assert demo.classes and demo.class_max_students == 40
    assert not settings_from_env({"ATTNVIZ_CLASSES": "0"}).classes
    assert (
        settings_from_env({"ATTNVIZ_PUBLIC_URL": "https://class.example.org/"}).public_url
        == "https://class.example.org"
    )


@pytest.mark.parametrize("url", ["postgresql://u:p@h/db", "postgres://u:p@h/db"])
def test_a_postgres_url_is_read_with_psycopg_3(url: str) -> None:
    from attnviz.classes import database_url
    from attnviz.classes.engine import shown_url

    assert database_url(url).startswith("postgresql+psycopg://u:p@h/db")
    assert "p@" not in shown_url(database_url(url))
