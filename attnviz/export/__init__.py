"""Exports: a figure as a page or an image, attention as CSV, NPZ and JSON (`formats`), with the
spreadsheet-safe cells (`csv_cells`) and the shortest round-tripping numbers (`json_numbers`)."""

from __future__ import annotations

from .formats import (
    CSV_FORMULA_CHARS,
    CSV_FORMULA_LOOKALIKES,
    PRECISION,
    SETTINGS_ELEMENT_ID,
    ExportUnavailable,
    attention_json,
    attention_npz,
    csv_cell,
    csv_uncell,
    figure_html,
    figure_image,
    head_csv,
    json_numbers,
    read_head_csv,
    script_json,
    settings_from_html,
    weights_json,
)

__all__ = [
    "CSV_FORMULA_CHARS",
    "CSV_FORMULA_LOOKALIKES",
    "PRECISION",
    "SETTINGS_ELEMENT_ID",
    "ExportUnavailable",
    "attention_json",
    "attention_npz",
    "csv_cell",
    "csv_uncell",
    "figure_html",
    "figure_image",
    "head_csv",
    "json_numbers",
    "read_head_csv",
    "script_json",
    "settings_from_html",
    "weights_json",
]
