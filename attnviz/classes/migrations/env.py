"""Alembic's environment for the class tables: always run from `engine.migrate` with a connection
handed over in `config.attributes["connection"]` (the package has no alembic.ini)."""

from __future__ import annotations

from alembic import context

from attnviz.classes.schema import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, version_table="attnviz_classes_version")
with context.begin_transaction():
    context.run_migrations()
