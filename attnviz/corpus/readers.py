"""Reading a corpus: one text a record from .txt, .csv, .jsonl or .parquet, streamed.

Nothing holds more than it keeps: lines with a byte bound, CSV in CSV_BLOCK_BYTES blocks,
Parquet in small batches in dictionary form; an over-long value is skipped before it is decoded.
A Parquet file declaring or unpacking to far more text than its bytes explain is refused (a
compression bomb). A record that cannot be analysed carries the reason, so the report lists it.
Record ids are what a person finds in the file: the line number (.txt, .jsonl), the 1-based data
row, header excluded (.csv, .parquet).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..models.tokens import clean_text

FORMATS = {".txt": "txt", ".text": "txt", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
# Why a record is not analysed. "no_tokens" is decided by the model (every token special or
# unknown to the tokenizer); the others by the reader.
SKIP_REASONS = {
    "empty": "nothing but white space or control characters",
    "too_long": "longer than the character limit",
    "not_text": "not text: undecodable bytes, invalid Unicode, or a value that is not a string",
    "bad_record": "a line that is not a JSON object with a 'text' field, or a CSV row that does not parse",
    "no_tokens": "no token the model knows",
}
DEFAULT_MAX_CHARS = 10_000  # far beyond 512 tokens; a 1 MB line is skipped, never tokenised
CSV_BLOCK_BYTES = 4 << 20  # one CSV row may be at most this long (pyarrow's streaming block)
PARQUET_BATCH_ROWS = 64
# A Parquet column chunk is unpacked a page at a time; its declared uncompressed size bounds the
# largest page. Ordinary text compresses 2-10 times: more than BOMB_RATIO, and above BOMB_FLOOR,
# is a bomb. The same ratio, against the file's size, bounds the text its rows unpack to.
BOMB_FLOOR_BYTES = 32 << 20
BOMB_RATIO = 64
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
        self.max_bytes = 4 * max_chars  # UTF-8 spends at most 4 bytes a character
        self.size = os.path.getsize(path)
        self._read = 0  # bytes (txt, jsonl, csv) or rows (parquet) consumed so far
        self._total = self.size

    def fraction(self) -> float:
        return min(1.0, self._read / self._total) if self._total else 1.0

    def records(self) -> Iterator[Record]:
        return {"txt": self._lines, "jsonl": self._lines, "csv": self._csv, "parquet": self._parquet}[self.kind]()

    def _lines(self) -> Iterator[Record]:
        # A JSON line may spell a character in up to 12 bytes ("\ud83d\ude00"); text needs 4 at most.
        per_char = 12 if self.kind == "jsonl" else 4
        limit = per_char * self.max_chars + 1024
        with open(self.path, "rb") as fh:
            for number, (line, whole) in enumerate(_bounded_lines(fh, limit), start=1):
                self._read = fh.tell()
                if number == 1 and line.startswith(b"\xef\xbb\xbf"):
                    line = line[3:]  # a UTF-8 byte order mark
                if not whole:
                    yield Record(number, None, "too_long")
                elif self.kind == "jsonl":
                    yield self._check(number, *_json_text(line))
                else:
                    yield self._check(number, *_decode(line))

    def _csv(self) -> Iterator[Record]:
        import pyarrow as pa
        from pyarrow import csv

        bad: list[Any] = []

        def invalid(row: Any) -> str:
            bad.append(row)
            return "skip"

        with open(self.path, "rb") as fh:
            try:
                reader = csv.open_csv(
                    fh,
                    read_options=csv.ReadOptions(use_threads=False, block_size=CSV_BLOCK_BYTES),
                    parse_options=csv.ParseOptions(newlines_in_values=True, invalid_row_handler=invalid),
                    # bytes, decoded here: a row of invalid UTF-8 is one skipped record, not a failed file
                    convert_options=csv.ConvertOptions(
                        include_columns=[TEXT_COLUMN], column_types={TEXT_COLUMN: pa.binary()}
                    ),
                )
            except (pa.ArrowInvalid, pa.ArrowKeyError) as exc:
                raise ValueError(
                    f"{self.path.name}: not a CSV file with a '{TEXT_COLUMN}' column ({_first_line(exc)})"
                ) from exc
            yield from self._csv_rows(reader, bad, fh)

    def _csv_rows(self, reader: Any, bad: list[Any], fh: IO[bytes]) -> Iterator[Record]:
        """Rows in file order, numbered as data rows. The parser hands over refused rows (pyarrow
        numbers the header 1) before each block's good rows; they are merged back in place.
        Progress: the bytes the parser has read of `fh`."""
        import pyarrow as pa

        row = 0
        refused: list[int] = []

        def before(limit: int | None) -> Iterator[Record]:
            while refused and (limit is None or refused[0] <= limit):
                yield Record(refused.pop(0), None, "bad_record")

        try:
            for batch in reader:
                self._read = fh.tell()
                refused.extend(sorted(int(r.number) - 1 if r.number else -1 for r in bad))
                bad.clear()
                for value, size in _arrow_values(batch.column(0), self.max_bytes):
                    row += 1
                    while refused and refused[0] == row:
                        yield from before(row)
                        row += 1
                    yield from before(row)
                    yield self._check(row, *_sized(value, size))
        except pa.ArrowInvalid as exc:
            raise ValueError(f"{self.path.name}: CSV stopped parsing after row {row} ({_first_line(exc)})") from exc
        self._read = fh.tell()
        refused.extend(sorted(int(r.number) - 1 if r.number else -1 for r in bad))
        yield from before(None)

    def _parquet(self) -> Iterator[Record]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:  # in dictionary form: a value repeated on many rows is held once, never once a row
            pf = pq.ParquetFile(self.path, read_dictionary=[TEXT_COLUMN])
        except (pa.ArrowInvalid, OSError) as exc:
            raise ValueError(f"{self.path.name}: not a Parquet file ({_first_line(exc)})") from exc
        names = pf.schema_arrow.names
        if TEXT_COLUMN not in names:
            raise ValueError(f"{self.path.name}: no '{TEXT_COLUMN}' column (columns: {', '.join(names)[:200]})")
        kind = pf.schema_arrow.field(TEXT_COLUMN).type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise ValueError(f"{self.path.name}: column '{TEXT_COLUMN}' holds {kind}, not text")
        # each row group's declared text size, from the footer: a bomb is refused before a page is unpacked
        meta = pf.metadata
        column = [meta.schema.column(j).path for j in range(meta.num_columns)].index(TEXT_COLUMN)
        for group in range(meta.num_row_groups):
            chunk = meta.row_group(group).column(column)
            size = int(chunk.total_uncompressed_size)
            if size > BOMB_FLOOR_BYTES and size > BOMB_RATIO * max(1, int(chunk.total_compressed_size)):
                raise ValueError(_bomb(self.path.name, f"row group {group + 1} declares", size, self.size))
        self._total = max(1, meta.num_rows)
        row, unpacked, most = 0, 0, max(BOMB_FLOOR_BYTES, BOMB_RATIO * self.size)
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=[TEXT_COLUMN]):
            for value, size in _arrow_values(batch.column(0), self.max_bytes):
                row += 1
                self._read = row
                unpacked += size
                if unpacked > most:
                    raise ValueError(_bomb(self.path.name, f"its first {row:,} rows unpack to", unpacked, self.size))
                yield self._check(row, *_sized(value, size))

    def _check(self, number: int, text: str | None, reason: str | None) -> Record:
        if reason is not None or text is None:
            return Record(number, None, reason or "not_text")
        if len(text) > self.max_chars:
            return Record(number, None, "too_long")
        try:
            text.encode("utf-8")  # a lone surrogate (a JSON "\\ud800") is not text a tokenizer takes
        except UnicodeEncodeError:
            return Record(number, None, "not_text")
        if not clean_text(text).strip():
            return Record(number, None, "empty")
        return Record(number, text)


def _bounded_lines(fh: IO[bytes], limit: int) -> Iterator[tuple[bytes, bool]]:
    """Each line without its end, and whether it was whole: an over-long line is read through in
    chunks, never held."""
    while line := fh.readline(limit + 1):
        if len(line) <= limit or line.endswith(b"\n"):
            yield line.rstrip(b"\r\n"), True
            continue
        while (rest := fh.readline(1 << 20)) and not rest.endswith(b"\n"):
            pass
        yield b"", False


def _arrow_values(array: Any, max_bytes: int) -> Iterator[tuple[Any, int]]:
    """(value, size in bytes) of each entry of an Arrow string or binary array, dictionary or
    not; a value over `max_bytes` comes as None, never copied out of Arrow. A null is (None, 0)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(array.type):
        values, rows = array.dictionary, array.indices.to_pylist()
    else:
        values, rows = array, list(range(len(array)))
    sizes = pc.binary_length(values).to_pylist()
    for i in rows:
        size = None if i is None else sizes[i]
        yield (values[i].as_py() if size is not None and size <= max_bytes else None), size or 0


def _bomb(name: str, what: str, unpacked: int, size: int) -> str:
    return (
        f"{name}: refused, {what} {unpacked / 2**20:,.0f} MB of text from a file of {size:,} bytes, "
        f"far more than ordinary text packs into (a compression bomb)"
    )


def _sized(value: str | bytes | None, size: int) -> tuple[str | None, str | None]:
    """A value from `_arrow_values` as (text, reason): a null is empty text."""
    if value is None:
        return ("", None) if size == 0 else (None, "too_long")
    return (value, None) if isinstance(value, str) else _decode(value)


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
    return (value, None) if isinstance(value, str) and "\x00" not in value else (None, "not_text")


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
