"""The class tables (SQLAlchemy 2 declarative): classes, their students, and every checked answer
(what the page told it kept as a catalogue key and fields, so it reads in either language).
Their history is the migrations in migrations/versions/: a change here comes with a new revision
there (tests/test_classes_store.py holds the migrated database's tables equal to these).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = ["AnswerRow", "Base", "ClassRow", "StudentRow"]


class Base(DeclarativeBase):
    pass


class ClassRow(Base):
    __tablename__ = "classes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    code: Mapped[str] = mapped_column(String(6), unique=True)
    secret_digest: Mapped[str] = mapped_column(String(64))
    title: Mapped[str] = mapped_column(String(120))
    lang: Mapped[str] = mapped_column(String(8))
    sentence_en: Mapped[str] = mapped_column(Text)
    model_en: Mapped[str] = mapped_column(String(200))
    sentence_zh: Mapped[str] = mapped_column(Text)
    model_zh: Mapped[str] = mapped_column(String(200))
    own_sentence: Mapped[bool] = mapped_column(Boolean, default=False)
    open_steps: Mapped[str] = mapped_column(String(200))  # step names, comma-separated, in lesson order
    max_students: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class StudentRow(Base):
    __tablename__ = "students"
    __table_args__ = (UniqueConstraint("class_id", "number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    class_id: Mapped[int] = mapped_column(ForeignKey("classes.id", ondelete="CASCADE"), index=True)
    token_digest: Mapped[str] = mapped_column(String(64), unique=True)
    number: Mapped[int] = mapped_column(Integer)  # "student 7" when no name was given
    name: Mapped[str] = mapped_column(String(40))
    lang: Mapped[str] = mapped_column(String(8))
    joined_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    handout: Mapped[str | None] = mapped_column(Text, nullable=True)  # their latest handout page, as they'd download it


class AnswerRow(Base):
    __tablename__ = "answers"
    __table_args__ = (
        Index("ix_answers_class_step", "class_id", "step"),
        Index("ix_answers_student_at", "student_id", "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    class_id: Mapped[int] = mapped_column(ForeignKey("classes.id", ondelete="CASCADE"))
    student_id: Mapped[int] = mapped_column(ForeignKey("students.id", ondelete="CASCADE"))
    step: Mapped[str] = mapped_column(String(20))
    answer: Mapped[str] = mapped_column(String(200))  # as the student saw it ("8: 它", "L2 H5")
    right: Mapped[bool] = mapped_column(Boolean)
    told_key: Mapped[str] = mapped_column(String(80))  # what the page said: lesson.why.* or lesson.hint.*
    told_fields: Mapped[str] = mapped_column(Text)  # JSON object of the key's fields (visitor tokens among them)
    sentence: Mapped[str] = mapped_column(Text)  # the sentence answered about (the class's, or the student's own)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
