"""Corpus readers (attnviz/corpus/readers.py) bounded by what they keep, before they unpack or
decode: a Parquet compression bomb is refused with one sentence and the reading process's peak
memory hardly moves; over-long values are skipped without being copied out of Arrow; a lone
surrogate is a skipped record, not a TypeError from the tokenizer (issue 26, item 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from attnviz.corpus import open_source
from attnviz.corpus.cli import main
from attnviz.corpus.readers import BOMB_FLOOR_BYTES

ROOT = Path(__file__).resolve().parents[1]

# The attack of issue 26: 2,048 rows of one 1 MiB string, zstd and dictionary encoding, a file
# of a few hundred bytes; the 1,024-row batches of the old reader unpacked it to 3.9 GB peak.
BOMB = """
import json, resource, sys
import pyarrow as pa, pyarrow.parquet as pq
from attnviz.corpus import open_source
path = sys.argv[1]
rows = pa.DictionaryArray.from_arrays(pa.array([0] * 2048, pa.int32()), pa.array(["x" * (1 << 20)]))
# without the stored Arrow schema the column reads back as plain strings (as from any writer)
pq.write_table(pa.table({"text": rows}), path, compression="zstd", use_dictionary=True, store_schema=False)
del rows
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
before, error, seen = peak(), None, 0
try:
    for record in open_source(path).records():
        seen += 1
except ValueError as exc:
    error = str(exc)
print(json.dumps({"before": before, "after": peak(), "error": error, "seen": seen}))
"""


def test_a_parquet_bomb_is_refused_with_one_sentence_and_memory_hardly_moves(tmp_path: Path) -> None:
    path = tmp_path / "bomb.parquet"
    done = subprocess.run(
        [sys.executable, "-c", BOMB, str(path)], capture_output=True, text=True, timeout=300, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert path.stat().st_size < 50_000
    assert out["error"] is not None and "compression bomb" in out["error"], out
    assert out["error"].startswith("bomb.parquet: refused") and "\n" not in out["error"]
    assert out["seen"] < 64  # refused within the first batch, not after unpacking the file
    # peak RSS of the reading process (before the fix: +3.6 GB); a few MB here, bound kept loose
    assert out["after"] - out["before"] < 100 * 2**20, out


def test_a_column_chunk_declaring_a_bomb_is_refused_before_any_page_is_unpacked(tmp_path: Path) -> None:
    path = tmp_path / "plain.parquet"
    table = pa.table({"text": pa.array(["y" * (BOMB_FLOOR_BYTES + 1024)])})
    pq.write_table(table, path, compression="zstd", use_dictionary=False, store_schema=False)
    del table
    records = open_source(path).records()
    with pytest.raises(ValueError, match=r"^plain\.parquet: refused, row group 1 declares 32 MB") as err:
        next(records)
    assert "compression bomb" in str(err.value)


def test_parquet_values_over_the_limit_are_skipped_and_dictionary_columns_are_text(tmp_path: Path) -> None:
    path = tmp_path / "mixed.parquet"
    values = ["a short one", "z" * 50_000, None, "a short one", "é" * 30]
    column = pa.array(values).dictionary_encode()  # stored as dictionary<string>: read as text
    pq.write_table(pa.table({"text": column}), path)
    got = [(r.id, r.text, r.skip) for r in open_source(path, max_chars=100).records()]
    assert got == [
        (1, "a short one", None),
        (2, None, "too_long"),
        (3, None, "empty"),
        (4, "a short one", None),
        (5, "é" * 30, None),
    ]


def test_many_rows_sharing_one_sentence_are_ordinary_text_not_a_bomb(tmp_path: Path) -> None:
    path = tmp_path / "same.parquet"
    pq.write_table(pa.table({"text": ["the same sentence, again and again."] * 20_000}), path, compression="zstd")
    records = list(open_source(path).records())
    assert len(records) == 20_000 and all(r.text == "the same sentence, again and again." for r in records)


def test_csv_values_over_the_limit_are_skipped_and_null_cells_are_empty(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text('id,text\n1,fine\n2,"' + "q" * 5_000 + '"\n3,\n4,"two\nlines"\n', encoding="utf-8")
    got = [(r.id, r.text, r.skip) for r in open_source(path, max_chars=1_000).records()]
    assert got == [(1, "fine", None), (2, None, "too_long"), (3, None, "empty"), (4, "two\nlines", None)]


LONE = '{"text": "\\ud800 alone"}\n{"text": "a pair \\ud83d\\ude00 is fine"}\n{"text": "\\udfff"}\n'


def test_a_lone_surrogate_is_a_skipped_line_with_its_reason(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(LONE, encoding="utf-8")
    got = [(r.id, r.text, r.skip) for r in open_source(path).records()]
    assert got == [(1, None, "not_text"), (2, "a pair \U0001f600 is fine", None), (3, None, "not_text")]


def test_the_corpus_command_skips_a_lone_surrogate_and_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(LONE, encoding="utf-8")
    out = tmp_path / "out"
    code = main([str(path), "--out", str(out), "--device", "cpu", "--max-tokens", "16", "--quiet"])
    captured = capsys.readouterr()
    assert code == 0, captured.err  # before: exit 2, "TypeError: TextEncodeInput must be ..."
    report = json.loads((out / "report.json").read_text())
    assert report["analysed"] == 1
    assert report["skips"] == [{"id": 1, "reason": "not_text"}, {"id": 3, "reason": "not_text"}]
