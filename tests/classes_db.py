"""The two databases every class storage test runs on: a SQLite file, and a fresh PostgreSQL
database on the machine's server (127.0.0.1:5432, trust auth, as on this project's machines and
CI: docs/DEVELOPERS.md), created for the test and dropped after. Without a PostgreSQL server
the PostgreSQL cases skip, except under CI (CI=true), where they fail."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

ADMIN_URL = os.environ.get("ATTNVIZ_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


@contextmanager
def postgres_database() -> Iterator[str]:
    """The URL of a new, empty PostgreSQL database, dropped on leaving."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = "attnviz_test_" + secrets.token_hex(6)
    try:
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # no server here
        admin.dispose()
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no PostgreSQL at {ADMIN_URL}: {type(exc).__name__}")
    try:
        yield make_url(ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
