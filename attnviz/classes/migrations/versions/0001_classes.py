"""The class tables: classes, students, answers.

Revision ID: 0001
Revises:
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "classes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("code", sa.String(6), nullable=False, unique=True),
        sa.Column("secret_digest", sa.String(64), nullable=False),
        sa.Column("title", sa.String(120), nullable=False),
        sa.Column("lang", sa.String(8), nullable=False),
        sa.Column("sentence_en", sa.Text(), nullable=False),
        sa.Column("model_en", sa.String(200), nullable=False),
        sa.Column("sentence_zh", sa.Text(), nullable=False),
        sa.Column("model_zh", sa.String(200), nullable=False),
        sa.Column("own_sentence", sa.Boolean(), nullable=False),
        sa.Column("open_steps", sa.String(200), nullable=False),
        sa.Column("max_students", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_classes_created_at", "classes", ["created_at"])
    op.create_table(
        "students",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("class_id", sa.Integer(), sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("token_digest", sa.String(64), nullable=False, unique=True),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(40), nullable=False),
        sa.Column("lang", sa.String(8), nullable=False),
        sa.Column("joined_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("handout", sa.Text(), nullable=True),
        sa.UniqueConstraint("class_id", "number"),
    )
    op.create_index("ix_students_class_id", "students", ["class_id"])
    op.create_table(
        "answers",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("class_id", sa.Integer(), sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("student_id", sa.Integer(), sa.ForeignKey("students.id", ondelete="CASCADE"), nullable=False),
        sa.Column("step", sa.String(20), nullable=False),
        sa.Column("answer", sa.String(200), nullable=False),
        sa.Column("right", sa.Boolean(), nullable=False),
        sa.Column("told_key", sa.String(80), nullable=False),
        sa.Column("told_fields", sa.Text(), nullable=False),
        sa.Column("sentence", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_answers_class_step", "answers", ["class_id", "step"])
    op.create_index("ix_answers_student_at", "answers", ["student_id", "at"])


def downgrade() -> None:
    op.drop_table("answers")
    op.drop_table("students")
    op.drop_table("classes")
