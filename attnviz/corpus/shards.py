"""Shards: the unit of work that is written, resumed and shared by both engines.

Record k goes to shard k // shard_size, written as `shards/part-NNNNNN.parquet` with every
record, skipped ones with their reason; a rerun passes over the shards already written. The
settings (model, limits, shard size, the input's fingerprint) are kept in `shards/manifest.json`;
a folder holding a run of other settings is refused rather than mixed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .batch import STATS, analyse
from .readers import Record, Source
from .store import Store

if TYPE_CHECKING:
    import pyarrow as pa

    from ..models import Runner

FORMAT = "attnviz-corpus/1"
SHARDS = "shards"
MANIFEST = f"{SHARDS}/manifest.json"
SAMPLE_BYTES = 1 << 20  # the fingerprint hashes the first, middle and last MiB and the size


class SettingsMismatch(ValueError):
    """The output folder holds a run made with other settings or another input."""


def part_name(shard: int) -> str:
    return f"{SHARDS}/part-{shard:06d}.parquet"


def input_name(shard: int) -> str:
    return f"{SHARDS}/input-{shard:06d}.parquet"


def fingerprint(path: Path) -> dict[str, Any]:
    """Size and a hash of the first, middle and last MiB: a copy matches, an edit (almost always)
    does not, and a large file costs 3 MiB to read."""
    size = path.stat().st_size
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for start in sorted({0, max(0, size // 2 - SAMPLE_BYTES // 2), max(0, size - SAMPLE_BYTES)}):
            fh.seek(start)
            digest.update(fh.read(SAMPLE_BYTES))
    return {"name": path.name, "bytes": size, "sample_sha256": digest.hexdigest()}


def check_settings(store: Store, settings: dict[str, Any]) -> bool:
    """Whether `store` already holds a finished run of these settings (True), nothing or an
    unfinished run of them (False, and the manifest is written). SettingsMismatch otherwise."""
    report = store.read_bytes("report.json")
    if report is not None:
        if _settings_of(report) == settings:
            return True
        raise SettingsMismatch(
            f"'{store.location}' holds a finished corpus run of other settings or another input; "
            f"choose an empty folder for --out, or delete that one"
        )
    manifest = store.read_bytes(MANIFEST)
    if manifest is not None and _settings_of(manifest) != settings:
        raise SettingsMismatch(
            f"'{store.location}' holds an unfinished corpus run of other settings or another input; "
            f"rerun it with the same command to finish it, or choose an empty folder for --out"
        )
    if manifest is None:
        store.write_bytes(MANIFEST, json.dumps({"format": FORMAT, "settings": settings}, indent=1).encode())
    return False


def _settings_of(raw: bytes) -> Any:
    try:
        return json.loads(raw).get("settings")
    except (ValueError, AttributeError):
        return None


def shards_of(source: Source, shard_size: int, limit: int | None) -> Iterator[tuple[int, list[Record]]]:
    """(shard number, its records) in input order, at most `limit` records in all."""
    records = islice(source.records(), limit)
    return enumerate(iter(lambda: list(islice(records, shard_size)), []))  # chunks until the empty one


def shard_schema(n_layers: int, n_heads: int) -> pa.Schema:
    import pyarrow as pa

    fields = [
        pa.field("id", pa.int64()),
        pa.field("text", pa.string()),
        pa.field("skip", pa.string()),
        pa.field("tokens", pa.list_(pa.string())),
        pa.field("n_tokens", pa.int32()),
        pa.field("truncated", pa.bool_()),
        *(pa.field(name, pa.list_(pa.float32(), n_layers * n_heads)) for name in STATS),
    ]
    return pa.schema(fields, metadata=shard_meta(n_layers, n_heads))


def shard_meta(n_layers: int, n_heads: int) -> dict[str, str]:
    return {"format": FORMAT, "layers": str(n_layers), "heads": str(n_heads), "stats_layout": "layer-major"}


def process_shard(
    runner: Runner,
    records: list[Record],
    *,
    max_tokens: int,
    batch_size: int,
    progress: Callable[[int], None] | None = None,
) -> pa.Table:
    """Analyse one shard's records: one row a record, in order."""
    import numpy as np
    import pyarrow as pa

    todo = [i for i, r in enumerate(records) if r.skip is None and r.text is not None]
    found = analyse(
        runner, [records[i].text or "" for i in todo], max_tokens=max_tokens, batch_size=batch_size, progress=progress
    )
    L, H = runner.n_layers, runner.n_heads
    n = len(records)
    skip: list[str | None] = [r.skip for r in records]
    tokens: list[list[str] | None] = [None] * n
    truncated = [False] * n
    for k, i in enumerate(todo):
        skip[i] = found.skip[k]
        tokens[i] = found.tokens[k]
        truncated[i] = found.truncated[k]
    columns = {
        "id": pa.array([r.id for r in records], pa.int64()),
        "text": pa.array([r.text if s is None else None for r, s in zip(records, skip, strict=True)], pa.string()),
        "skip": pa.array(skip, pa.string()),
        "tokens": pa.array(tokens, pa.list_(pa.string())),
        "n_tokens": pa.array([len(t) if t else 0 for t in tokens], pa.int32()),
        "truncated": pa.array(truncated, pa.bool_()),
    }
    skipped = pa.array([s is not None for s in skip], pa.bool_())
    for name in STATS:
        stats = np.full((n, L * H), np.nan, dtype=np.float32)  # layer-major, NaN (and masked) where skipped
        stats[todo] = found.stats[name].reshape(len(todo), L * H)
        flat = pa.array(stats.reshape(-1), pa.float32())
        columns[name] = pa.FixedSizeListArray.from_arrays(flat, L * H, mask=skipped)
    return pa.table(columns, schema=shard_schema(L, H))


def shard_is_complete(store: Store, shard: int, records: int) -> bool:
    """Whether the shard's file is there, readable and holds `records` rows (a file cut short by
    a crash on a filesystem without atomic renames is redone, not trusted)."""
    import pyarrow.parquet as pq

    name = part_name(shard)
    if not store.exists(name):
        return False
    try:
        return bool(pq.read_metadata(store.path(name), filesystem=store.fs).num_rows == records)
    except Exception:
        return False
