"""What the command lines share: one-line errors, and a reader that went away.

`attnviz ... | head -4` closes the pipe after four lines; the next write raises BrokenPipeError.
Like any Unix tool, the command then stops quietly with status 0: the rest of the output goes to
/dev/null so that the interpreter's own flush at exit cannot fail again
(https://docs.python.org/3/library/signal.html#note-on-sigpipe).
"""

from __future__ import annotations

import os
import sys

__all__ = ["one_line", "reader_gone"]


def one_line(exc: BaseException) -> str:
    """The first line of an error's message, at most 500 characters (its type's name when it
    has none): a message can quote a visitor's file or text."""
    lines = str(exc).strip().splitlines()
    return lines[0][:500] if lines else type(exc).__name__


def reader_gone() -> int:
    """Standard output's reader closed the pipe: send what is left nowhere, exit 0."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0
