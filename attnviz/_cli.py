"""What the command lines share: argparse with one-line errors, and `guarded`, which ends every
command with status 0, or 2 and one line on stderr (never a traceback). A closed pipe
(`attnviz ... | head -4`) stops quietly with status 0, as a Unix tool does
(https://docs.python.org/3/library/signal.html#note-on-sigpipe).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from .config import check_text, settings_from_env

if TYPE_CHECKING:
    from .models import Runner

__all__ = ["Parser", "guarded", "load_model", "read_text", "with_text", "write_json"]


class Parser(argparse.ArgumentParser):
    """argparse for the command `name` ("attnviz train"), shown as `python -m <name>` unless `prog`
    says otherwise, whose usage errors are one line, `<name>: error: ...`, with exit status 2."""

    def __init__(self, name: str, description: str, prog: str | None = None) -> None:
        super().__init__(prog=prog or f"python -m {name}", description=description)
        self.error_name = name

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.error_name}: error: {message}\n")


def read_text(arg: str) -> str:
    """A text argument ('-' reads standard input) once `check_text` accepts it (ATTNVIZ_MAX_CHARS)."""
    return check_text(sys.stdin.read() if arg == "-" else arg, settings_from_env().max_chars)


def load_model(name: str, **options: Any) -> Runner:
    """`models.load_model`, imported when a model is loaded: torch comes with it, so `--help`
    and a refused input answer at once (tests/test_imports.py)."""
    from .models import load_model as load

    return load(name, **options)


def with_text(payload: bytes, text: str) -> bytes:
    """A --json document (UTF-8 bytes of one JSON object) with `"text"` (the text analysed) added
    as its last key, so its first keys stay where scripts read them; a lone surrogate in the text
    becomes its JSON escape, as in export.weights_json."""
    body = payload.strip()
    if not (body.startswith(b"{") and body.endswith(b"}")):
        raise ValueError("a --json document is one JSON object")
    key = b'"text": ' + json.dumps(text, ensure_ascii=False).encode("utf-8", "backslashreplace")
    head = body[:-1].rstrip()
    tail = payload[len(payload.rstrip()) :]  # the trailing newline, if any
    return head + (b"" if head == b"{" else b", ") + key + b"}" + tail


def write_json(out: str, payload: bytes) -> None:
    """A --json document (UTF-8 bytes) into the file `out`, or for "-" to standard output, newline-ended."""
    if out != "-":
        with open(out, "wb") as fh:
            fh.write(payload)
        return
    stream = getattr(sys.stdout, "buffer", None)
    if stream is None:  # a text-only stream (e.g. io.StringIO in a notebook)
        sys.stdout.write(payload.decode("utf-8") + "\n")
        return
    sys.stdout.flush()
    stream.write(payload + b"\n")
    stream.flush()


def guarded(name: str, body: Callable[[], int], expected: tuple[type[Exception], ...]) -> int:
    """body()'s status; an `expected` error as `<name>: error: <message>` and any other as
    `<name>: error: <Type>: <message>`, both with status 2, the message's first line cut to 500
    characters (its type's name when it has none: a message can quote a visitor's file or text)."""
    try:
        return body()
    except BrokenPipeError:  # `| head` closed the pipe: stop quietly
        # what is left goes nowhere (the interpreter's own flush at exit would fail again)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # a CLI user gets one line, never a traceback
        lines = str(exc).strip().splitlines()
        kind = "" if isinstance(exc, expected) else f"{type(exc).__name__}: "
        print(f"{name}: error: {kind}{lines[0][:500] if lines else type(exc).__name__}", file=sys.stderr)
        return 2
