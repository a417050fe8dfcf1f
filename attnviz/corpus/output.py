"""The finished run: sentences.parquet, heads.parquet and report.json, and reading them back.

`finish` streams the shards into the outputs one at a time; report.json is written last, so a
folder with it holds a finished run.

    sentences.parquet  one row a sentence analysed: id, text, tokens, n_tokens, truncated, and
                       per statistic layers x heads float32, layer-major ([l * heads + h])
    heads.parquet      one row a (layer, head): sentences, and per statistic its mean, std
                       (population, over sentences), min and max
    report.json        settings, lines read, analysed, truncated, skipped by reason, and every
                       skipped record: {"id", "reason"}
"""

from __future__ import annotations

import heapq
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from .batch import STATS
from .shards import FORMAT, SHARDS, part_name, shard_meta, shard_schema
from .store import Store

SENTENCE_COLUMNS = ["id", "text", "tokens", "n_tokens", "truncated", *STATS]
REPORT = "report.json"


class _Moments:
    """Count, mean and M2 per (stat, head), merged shard by shard (Chan et al.'s parallel
    update), plus min and max: exact means and spreads without holding the corpus."""

    def __init__(self, size: int):
        self.n = 0
        self.mean = np.zeros((len(STATS), size))
        self.m2 = np.zeros((len(STATS), size))
        self.min = np.full((len(STATS), size), np.inf)
        self.max = np.full((len(STATS), size), -np.inf)

    def add(self, values: np.ndarray) -> None:  # (stats, rows, size) float64
        nb = values.shape[1]
        if nb == 0:
            return
        mean_b = values.mean(1)
        m2_b = ((values - mean_b[:, None, :]) ** 2).sum(1)
        total = self.n + nb
        delta = mean_b - self.mean
        self.mean = self.mean + delta * (nb / total)
        self.m2 = self.m2 + m2_b + delta**2 * (self.n * nb / total)
        self.n = total
        self.min = np.minimum(self.min, values.min(1))
        self.max = np.maximum(self.max, values.max(1))


def finish(store: Store, settings: dict[str, Any], n_shards: int, engine: str) -> None:
    """Write the outputs from shards 0 .. n_shards - 1, then remove the shards."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    L, H = 0, 0  # an empty input has no shard to say its model's shape
    if n_shards:
        meta = pq.read_schema(store.path(part_name(0)), filesystem=store.fs).metadata or {}
        L, H = int(meta[b"layers"]), int(meta[b"heads"])
    counts = {"lines_read": 0, "analysed": 0, "truncated": 0}
    reasons: Counter[str] = Counter()
    moments = _Moments(L * H)
    with store.writing("sentences.parquet") as tmp:
        writer = None
        for shard in range(n_shards):
            table = store.read_table(part_name(shard))
            counts["lines_read"] += table.num_rows
            reasons.update(table.column("skip").drop_null().to_pylist())
            kept = table.filter(pc.is_null(table.column("skip"))).select(SENTENCE_COLUMNS)
            counts["analysed"] += kept.num_rows
            counts["truncated"] += int(pc.sum(kept.column("truncated")).as_py() or 0)
            moments.add(np.stack([_values(kept.column(name), L * H) for name in STATS]).astype(np.float64))
            if writer is None:
                writer = pq.ParquetWriter(tmp, kept.schema, compression="zstd", filesystem=store.fs)
            writer.write_table(kept)
        if writer is None:  # an empty input: an empty table of the same columns
            schema = pa.schema([shard_schema(L, H).field(c) for c in SENTENCE_COLUMNS], metadata=shard_meta(L, H))
            writer = pq.ParquetWriter(tmp, schema, compression="zstd", filesystem=store.fs)
        writer.close()
    store.write_table("heads.parquet", _heads_table(moments, L, H))
    report = {
        "format": FORMAT,
        "settings": settings,
        "engine": engine,
        "layers": L,
        "heads": H,
        **counts,
        "skipped": reasons.total(),
        "skipped_by_reason": dict(sorted(reasons.items())),
    }
    _write_report(store, report, n_shards)
    store.remove(SHARDS)


def _values(column: Any, size: int) -> np.ndarray:
    """A column of fixed-size float lists as a (rows, size) array (no nulls: analysed rows)."""
    if len(column) == 0:
        return np.zeros((0, size), dtype=np.float32)
    flat = (column.combine_chunks() if hasattr(column, "combine_chunks") else column).flatten()
    return np.asarray(flat.to_numpy(zero_copy_only=False), dtype=np.float32).reshape(-1, size)


def _heads_table(m: _Moments, L: int, H: int) -> Any:
    import pyarrow as pa

    columns: dict[str, Any] = {
        "layer": pa.array(np.repeat(np.arange(L), H), pa.int32()),
        "head": pa.array(np.tile(np.arange(H), L), pa.int32()),
        "sentences": pa.array(np.full(L * H, m.n), pa.int64()),
    }
    empty = m.n == 0
    for k, name in enumerate(STATS):
        std = np.sqrt(np.maximum(m.m2[k] / max(m.n, 1), 0.0))
        for suffix, values in (("mean", m.mean[k]), ("std", std), ("min", m.min[k]), ("max", m.max[k])):
            columns[f"{name}_{suffix}"] = pa.array(np.full(L * H, np.nan) if empty else values, pa.float64())
    return pa.table(columns).replace_schema_metadata(shard_meta(L, H))


def _write_report(store: Store, report: dict[str, Any], n_shards: int) -> None:
    """report.json with every skipped record, streamed shard by shard."""
    import pyarrow.compute as pc

    head = json.dumps(report, ensure_ascii=False, indent=1)[:-2]  # without the closing "\n}"
    with store.writing(REPORT) as tmp, store.fs.open_output_stream(tmp) as out:
        out.write(f'{head},\n "skips": ['.encode())
        first = True
        for shard in range(n_shards):
            table = store.read_table(part_name(shard), columns=["id", "skip"])
            table = table.filter(pc.invert(pc.is_null(table.column("skip"))))
            for rid, reason in zip(table.column("id").to_pylist(), table.column("skip").to_pylist(), strict=True):
                out.write(("" if first else ",").encode() + json.dumps({"id": rid, "reason": reason}).encode())
                first = False
        out.write(b"]\n}\n")


@dataclass
class CorpusResult:
    """A finished corpus run, read back from its folder."""

    location: str
    report: dict[str, Any]
    n_layers: int
    n_heads: int
    heads: dict[str, np.ndarray]  # heads.parquet columns; "<stat>_<mean|std|min|max>" as (L, H)
    store: Store

    @property
    def analysed(self) -> int:
        return int(self.report.get("analysed", 0))

    def grid(self, stat: str, what: str = "mean") -> np.ndarray:
        """(layers, heads) of one statistic's mean, std, min or max over the corpus."""
        key = f"{stat}_{what}"
        if key not in self.heads:
            raise KeyError(f"no column {key!r}: statistics are {', '.join(STATS)}; mean, std, min or max")
        return self.heads[key]

    def sentences(self, columns: list[str] | None = None) -> Any:
        """sentences.parquet as a pyarrow Table, all of it."""
        return self.store.read_table("sentences.parquet", columns=columns)

    def typical(
        self, stat: str, layer: int, head: int, k: int = 5
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The k sentences where the head is closest to its corpus mean of `stat` and the k
        farthest from it: {"id", "text", "value"}, closest or farthest first."""
        import pyarrow.parquet as pq

        if stat not in STATS or not (0 <= layer < self.n_layers and 0 <= head < self.n_heads):
            raise ValueError(f"no statistic {stat!r} for layer {layer}, head {head}")
        mean = float(self.grid(stat)[layer, head])
        col = layer * self.n_heads + head
        near: list[dict[str, Any]] = []
        far: list[dict[str, Any]] = []
        with self.store.fs.open_input_file(self.store.path("sentences.parquet")) as fh:
            for batch in pq.ParquetFile(fh).iter_batches(batch_size=4096, columns=["id", "text", stat]):
                values = [float(v) for v in _values(batch.column(2), self.n_layers * self.n_heads)[:, col]]
                rows = zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), values, strict=True)
                seen = [{"id": rid, "text": text, "value": value} for rid, text, value in rows]
                # by the distance from the mean, ties to the lower id
                near = heapq.nsmallest(k, near + seen, key=lambda e: (abs(e["value"] - mean), e["id"]))
                far = heapq.nsmallest(k, far + seen, key=lambda e: (-abs(e["value"] - mean), e["id"]))
        return near, far


def load(location: str) -> CorpusResult:
    """Read a finished run back from its folder (a path or a URI). ValueError if the folder
    holds no finished run."""
    store = Store(location)
    raw = store.read_bytes(REPORT)
    if raw is None:
        raise ValueError(f"'{location}' holds no finished corpus run (no {REPORT})")
    report = json.loads(raw)
    L, H = int(report["layers"]), int(report["heads"])
    table = store.read_table("heads.parquet")
    heads = {
        name: np.asarray(table.column(name).to_numpy(zero_copy_only=False)).reshape(L, H)
        for name in table.column_names
        if name not in ("layer", "head")
    }
    return CorpusResult(location, report, L, H, heads, store)
