"""Reading a corpus: one text a record from .txt, .csv, .jsonl or .parquet, streamed.

Nothing here holds the whole file: text files are read a line at a time with a byte bound on
each line, CSV in blocks through pyarrow's streaming reader, Parquet a batch of rows at a time.
A record that cannot be analysed is still a record: it carries the reason it is skipped, so
that the report lists every one.

Record ids are what a person finds in the file: the line number for .txt and .jsonl, the data
row number (1-based, header excluded; a quoted newline does not start a row) for .csv and
.parquet. A CSV row the parser cannot split into the header's columns keeps its row number.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..models.tokens import clean_text

__all__ = [
    "DEFAULT_MAX_CHARS",
    "FORMATS",
    "SKIP_REASONS",
    "Record",
    "Source",
    "open_source",
]

FORMATS = {".txt": "txt", ".text": "txt", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
# Why a record is not analysed. "no_tokens" is decided by the model (every token special or
# unknown to the tokenizer); the others by the reader.
SKIP_REASONS = {
    "empty": "nothing but white space or control characters",
    "too_long": "longer than the character limit",
    "not_text": "not text: undecodable bytes, or a value that is not a string",
    "bad_record": "a line that is not a JSON object with a 'text' field, or a CSV row that does not parse",
    "no_tokens": "no token the model knows",
}
DEFAULT_MAX_CHARS = 10_000  # far beyond 512 tokens; a 1 MB line is skipped, never tokenised
CSV_BLOCK_BYTES = 16 << 20  # one CSV row may be at most this long (pyarrow's streaming block)
PARQUET_BATCH_ROWS = 1024
TEXT_COLUMN = "text"


@dataclass(frozen=True)
class Record:
    """One record of the input: its id, and its text or the reason it is skipped."""

    id: int
    text: str | None
    skip: str | None = None


class Source:
    """An open input file: `records()` streams it once; `fraction()` says how much is read."""

    def __init__(self, path: Path, kind: str, max_chars: int):
        self.path = path
        self.kind = kind
        self.max_chars = max_chars
        self.size = os.path.getsize(path)
        self._read = 0  # bytes (txt, jsonl, csv) or rows (parquet) consumed so far
        self._total = self.size

    def fraction(self) -> float:
        return min(1.0, self._read / self._total) if self._total else 1.0

    def records(self) -> Iterator[Record]:
        reader = {"txt": self._lines, "jsonl": self._lines, "csv": self._csv, "parquet": self._parquet}[self.kind]
        yield from reader()

    # --- one text a line ----------------------------------------------------------------------

    def _lines(self) -> Iterator[Record]:
        # A JSON line may spell a character in up to 12 bytes ("\ud83d\ude00"); text needs 4 at most.
        per_char = 12 if self.kind == "jsonl" else 4
        limit = per_char * self.max_chars + 1024
        with open(self.path, "rb") as fh:
            number = 0
            while True:
                line, whole = _bounded_line(fh, limit)
                self._read = fh.tell()
                if line is None:
                    return
                number += 1
                if number == 1 and line.startswith(b"\xef\xbb\xbf"):
                    line = line[3:]  # a UTF-8 byte order mark
                if not whole:
                    yield Record(number, None, "too_long")
                elif self.kind == "jsonl":
                    yield self._check(number, *_json_text(line))
                else:
                    yield self._check(number, *_decode(line))

    # --- tables -----------------------------------------------------------------------------

    def _csv(self) -> Iterator[Record]:
        import pyarrow as pa
        from pyarrow import csv

        bad: list[Any] = []

        def invalid(row: Any) -> str:
            bad.append(row)
            return "skip"

        counting = _Counting(open(self.path, "rb"), self)  # noqa: SIM115 - closed below, also on errors
        try:
            reader = csv.open_csv(
                counting,
                read_options=csv.ReadOptions(use_threads=False, block_size=CSV_BLOCK_BYTES),
                parse_options=csv.ParseOptions(newlines_in_values=True, invalid_row_handler=invalid),
                # bytes, decoded here: a row of invalid UTF-8 is one skipped record, not a failed file
                convert_options=csv.ConvertOptions(
                    include_columns=[TEXT_COLUMN], column_types={TEXT_COLUMN: pa.binary()}
                ),
            )
        except (pa.ArrowInvalid, pa.ArrowKeyError) as exc:
            counting.close()
            raise ValueError(
                f"{self.path.name}: not a CSV file with a '{TEXT_COLUMN}' column ({_first_line(exc)})"
            ) from exc
        with counting:
            yield from self._csv_rows(reader, bad)

    def _csv_rows(self, reader: Any, bad: list[Any]) -> Iterator[Record]:
        """Rows in file order, numbered as data rows (header excluded). The parser hands over
        the rows it refused (with pyarrow's row number, header = 1) before each block's good
        rows; they are merged back in their place, so ids are the rows a person counts."""
        import pyarrow as pa

        row = 0
        refused: list[int] = []

        def before(limit: int | None) -> Iterator[Record]:
            while refused and (limit is None or refused[0] <= limit):
                yield Record(refused.pop(0), None, "bad_record")

        try:
            for batch in reader:
                refused.extend(sorted(int(r.number) - 1 if r.number else -1 for r in bad))
                bad.clear()
                for value in batch.column(0).to_pylist():
                    row += 1
                    while refused and refused[0] == row:
                        yield from before(row)
                        row += 1
                    yield from before(row)
                    yield self._check(row, *(_decode(value) if value is not None else ("", None)))
        except pa.ArrowInvalid as exc:
            raise ValueError(f"{self.path.name}: CSV stopped parsing after row {row} ({_first_line(exc)})") from exc
        refused.extend(sorted(int(r.number) - 1 if r.number else -1 for r in bad))
        yield from before(None)

    def _parquet(self) -> Iterator[Record]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(self.path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise ValueError(f"{self.path.name}: not a Parquet file ({_first_line(exc)})") from exc
        field = pf.schema_arrow.field(TEXT_COLUMN) if TEXT_COLUMN in pf.schema_arrow.names else None
        if field is None:
            raise ValueError(
                f"{self.path.name}: no '{TEXT_COLUMN}' column (columns: {', '.join(pf.schema_arrow.names)[:200]})"
            )
        if not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)):
            raise ValueError(f"{self.path.name}: column '{TEXT_COLUMN}' holds {field.type}, not text")
        self._total = max(1, pf.metadata.num_rows)
        row = 0
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=[TEXT_COLUMN]):
            for value in batch.column(0).to_pylist():
                row += 1
                self._read = row
                yield self._check(row, value or "", None)

    # --- what every record goes through -------------------------------------------------------

    def _check(self, number: int, text: str | None, reason: str | None) -> Record:
        if reason is not None or text is None:
            return Record(number, None, reason or "not_text")
        if len(text) > self.max_chars:
            return Record(number, None, "too_long")
        if not clean_text(text).strip():
            return Record(number, None, "empty")
        return Record(number, text)


class _Counting:
    """A binary file that counts the bytes pyarrow reads from it (for progress)."""

    def __init__(self, fh: IO[bytes], source: Source):
        self._fh = fh
        self._source = source
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        data = self._fh.read(n)
        self._source._read += len(data)
        return data

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True
        self._fh.close()

    def __enter__(self) -> _Counting:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _bounded_line(fh: IO[bytes], limit: int) -> tuple[bytes | None, bool]:
    """The next line without its end (at most `limit` bytes kept; None at the end of the
    file), and whether it was whole. An over-long line is read through to its end in chunks,
    never held whole."""
    line = fh.readline(limit + 1)
    if not line:
        return None, True
    if len(line) <= limit or line.endswith(b"\n"):
        return line.rstrip(b"\r\n"), True
    while True:
        rest = fh.readline(1 << 20)
        if not rest or rest.endswith(b"\n"):
            return b"", False


def _decode(raw: bytes) -> tuple[str | None, str | None]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not_text"
    if "\x00" in text:  # NUL bytes: a binary file, or a record that is not text
        return None, "not_text"
    return text, None


def _json_text(raw: bytes) -> tuple[str | None, str | None]:
    if not raw.strip():
        return "", None
    try:
        obj = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None, "bad_record"
    if not isinstance(obj, dict) or TEXT_COLUMN not in obj:
        return None, "bad_record"
    value = obj[TEXT_COLUMN]
    if value is None:
        return "", None
    if not isinstance(value, str):
        return None, "not_text"
    return (value, None) if "\x00" not in value else (None, "not_text")


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:200]


def open_source(path: str | os.PathLike[str], max_chars: int = DEFAULT_MAX_CHARS) -> Source:
    """The input at `path` (a local file): its format from the extension. ValueError when the
    file is missing, a folder, or of a format this does not read."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ValueError(f"input '{path}' is not a file")
    kind = FORMATS.get(p.suffix.lower())
    if kind is None:
        raise ValueError(f"input '{p.name}': use a .txt (one text a line), .csv or .jsonl (a 'text' field) or .parquet")
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    return Source(p, kind, max_chars)
