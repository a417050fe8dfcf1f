"""Exports: a figure as a page or an image, attention as CSV, NPZ and JSON (`formats`), with the
spreadsheet-safe cells (`csv_cells`) and the shortest round-tripping numbers (`json_numbers`)."""

from __future__ import annotations

from .formats import *  # noqa: F403
from .formats import __all__ as __all__
