"""The class database: its URL from the settings, the engine, and the migrations run on opening.
SQLite by default (`classes.sqlite3` in ATTNVIZ_DATA_DIR), written with a write-ahead log and
`synchronous=FULL`, so an answer the page called saved survives the process being killed and the
machine losing power; ATTNVIZ_DATABASE_URL (postgresql://..., psycopg 3) lets several replicas
serve one class. Migrations (Alembic, migrations/versions/) run under a lock, PostgreSQL's advisory
lock or SQLite's write lock (BEGIN IMMEDIATE), so replicas starting together migrate once.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text

__all__ = ["MIGRATIONS", "database_url", "default_data_dir", "make_engine", "migrate", "shown_url"]

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
FILE_NAME = "classes.sqlite3"
_LOCK_ID = 0x41_54_54_4E  # "ATTN": the advisory lock the migrations take on PostgreSQL


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "attnviz"


def database_url(database: str = "", data_dir: str = "") -> str:
    """The SQLAlchemy URL: `database` (postgresql:// or postgres:// read with psycopg 3; any other
    SQLAlchemy URL as given) when set, else the SQLite file in `data_dir` (created)."""
    if database:
        return re.sub(r"^postgres(ql)?://", "postgresql+psycopg://", database)
    folder = Path(data_dir) if data_dir else default_data_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / FILE_NAME}"


def shown_url(url: str) -> str:
    """The URL without its password, for messages and logs."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        # pysqlite would delay BEGIN (SQLAlchemy's recipe takes it over); IMMEDIATE takes the write lock at
        # once, so a read-then-write transaction waits for another writer (busy_timeout) instead of failing
        event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5)


def _sqlite_pragmas(dbapi_connection: Any, _record: object) -> None:
    dbapi_connection.isolation_level = None  # BEGIN is ours (make_engine), not the driver's
    cursor = dbapi_connection.cursor()
    for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON", "busy_timeout=30000"):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def migrate(engine: Engine) -> None:
    """Bring the database to the newest revision (an empty one included), once however many start together."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_lock(:id)"), {"id": _LOCK_ID})
            connection.commit()
        try:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
            connection.commit()
        finally:
            if engine.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_unlock(:id)"), {"id": _LOCK_ID})
                connection.commit()
