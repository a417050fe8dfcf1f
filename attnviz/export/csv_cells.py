"""CSV cells a spreadsheet shows as text (OWASP CSV injection, ASVS 1.2.10), reversibly:
`csv_cell` adds a leading ' to a cell that would start a formula, `csv_uncell` takes it off."""

from __future__ import annotations

import re

# OWASP CSV injection (and ASVS 1.2.10): a cell starting with one of these is a formula to a
# spreadsheet (tab, CR, LF and NUL because some strip them before looking).
CSV_FORMULA_CHARS = ("=", "+", "-", "@", "\t", "\r", "\n", "\0")
# Also a formula to some spreadsheets: one of these after leading white space (" =1+1", a no-break
# or ideographic space), or a full-width or small sign ("＝1+1", which an East Asian input method
# types and a spreadsheet may fold to "="), the minus sign included.
CSV_FORMULA_LOOKALIKES = ("=", "+", "-", "@", "＝", "＋", "－", "＠", "﹦", "﹢", "﹣", "﹫", "−")
# skipped before the sign: white space (\s is str.isspace), 's and zero-width characters
_CSV_SKIPPED = re.compile("^[\\s'\u200b\u200c\u200d\u2060\ufeff]+")


def csv_cell(text: str) -> str:
    """A text cell a spreadsheet shows as text: a leading ' when `_csv_formula` says so (and
    `csv_uncell` strips exactly one in that same case)."""
    return "'" + text if _csv_formula(text) else text


def csv_uncell(cell: str) -> str:
    """The text `csv_cell` was given."""
    return cell[1:] if cell.startswith("'") and _csv_formula(cell) else cell


def _csv_formula(text: str) -> bool:
    """Whether a spreadsheet could read `text` as a formula: after any leading 's it starts
    with one of CSV_FORMULA_CHARS, or after any leading 's, white space and zero-width
    characters with one of CSV_FORMULA_LOOKALIKES. One more ' in front never changes the answer,
    which makes `csv_uncell` exact."""
    if text.lstrip("'").startswith(CSV_FORMULA_CHARS):
        return True
    return _CSV_SKIPPED.sub("", text, count=1).startswith(CSV_FORMULA_LOOKALIKES)
