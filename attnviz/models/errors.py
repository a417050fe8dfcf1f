"""ModelLoadError, without torch: the command line and the pages name it in their `except`
clauses before anything is loaded (`attnviz --help` and a refused text pay no torch import)."""

from __future__ import annotations


class ModelLoadError(RuntimeError):
    """A model could not be found, loaded, or gives no attention weights.

    str(error) is for the person who named the model on their own machine (the command line, a
    notebook). `public` is what a server may show a visitor: it names the model as typed and
    never reveals the server's files (whether a folder exists, resolved paths)."""

    def __init__(self, message: str, public: str | None = None):
        super().__init__(message)
        self.public = public or message
