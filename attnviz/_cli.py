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
from typing import Any, NoReturn

__all__ = ["Parser", "guarded", "one_line", "reader_gone", "with_text", "write_json"]


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, `<name>: error: ...`, with exit status 2."""

    def __init__(self, *args: Any, error_name: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.error_name = error_name

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.error_name}: error: {message}\n")


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


def one_line(exc: BaseException) -> str:
    """The first line of an error's message, at most 500 characters (its type's name when it
    has none): a message can quote a visitor's file or text."""
    lines = str(exc).strip().splitlines()
    return lines[0][:500] if lines else type(exc).__name__


def reader_gone() -> int:
    """Standard output's reader closed the pipe: send what is left nowhere (the interpreter's own
    flush at exit would fail again), exit 0."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0


def guarded(name: str, body: Callable[[], int], expected: tuple[type[Exception], ...]) -> int:
    """body()'s status; an `expected` error as `<name>: error: <message>` and any other as
    `<name>: error: <Type>: <message>`, both with status 2; a closed pipe ends quietly."""
    try:
        return body()
    except BrokenPipeError:  # `| head` closed the pipe: stop quietly
        return reader_gone()
    except expected as exc:
        print(f"{name}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # a CLI user gets one line, never a traceback
        print(f"{name}: error: {type(exc).__name__}: {one_line(exc)}", file=sys.stderr)
        return 2
