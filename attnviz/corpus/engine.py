"""`run`: a corpus through a model, shard by shard, resumable; the local engine (Ray's runs the
same `process_shard` in ray_engine.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Literal

from ..models import EMBEDDED_MODEL, Runner, check_model_name, load_model
from .output import CorpusResult, finish, load
from .progress import Meter, RunProgress
from .readers import DEFAULT_MAX_CHARS, open_source
from .shards import FORMAT, check_settings, fingerprint, part_name, process_shard, shard_is_complete, shards_of
from .store import Store

DEFAULT_CORPUS_TOKENS = 128  # Clark et al. 2019 used 128-token segments
DEFAULT_BATCH_SIZE = 32
DEFAULT_SHARD_SIZE = 512  # records a shard: what a kill can cost, and the Ray engine's unit of work
Engine = Literal["local", "ray"]


def run(
    path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    model: str | Runner = EMBEDDED_MODEL,
    *,
    engine: Engine = "local",
    max_tokens: int = DEFAULT_CORPUS_TOKENS,
    batch_size: int = DEFAULT_BATCH_SIZE,
    device: str = "auto",
    max_chars: int = DEFAULT_MAX_CHARS,
    limit: int | None = None,
    shard_size: int = DEFAULT_SHARD_SIZE,
    progress: Callable[[RunProgress], None] | None = None,
    ray_address: str | None = None,
) -> CorpusResult:
    """Per-head statistics of every text in `path` (.txt, .csv, .jsonl or .parquet), written to
    `out_dir` (a folder path or a URI pyarrow can write) and returned as a `CorpusResult`.

    `model` is a name, or (local engine) a loaded Runner. A stopped run resumes when called again
    with the same arguments; a finished one is read back. `progress` may raise to stop the run.
    ValueError for bad arguments or input; ModelLoadError when the model cannot be loaded.
    """
    name = model if isinstance(model, str) else model.name
    check_model_name(name)
    if engine not in ("local", "ray"):
        raise ValueError("engine must be 'local' or 'ray'")
    if max_tokens < 2 or batch_size < 1 or shard_size < 1 or (limit is not None and limit < 0):
        raise ValueError("max_tokens must be at least 2, batch_size and shard_size at least 1, limit not negative")
    source = open_source(path, max_chars)
    store = Store(out_dir)
    settings: dict[str, Any] = {
        "format": FORMAT,
        "input": fingerprint(source.path),
        "input_format": source.kind,
        "model": name,
        "max_tokens": max_tokens,
        "max_chars": max_chars,
        "limit": limit,
        "shard_size": shard_size,
    }
    if check_settings(store, settings):
        return load(os.fspath(out_dir))
    if engine == "ray":
        meter = Meter(progress)
        from .ray_engine import run_ray

        n_shards = run_ray(source, store, settings, meter, batch_size=batch_size, device=device, address=ray_address)
    else:
        runner = model if not isinstance(model, str) else load_model(model, device, max_tokens=max_tokens)
        meter = Meter(progress)  # the rate counts from here: a model load is not analysis
        n_shards = _run_local(source, store, settings, runner, meter, batch_size)
    finish(store, settings, n_shards, engine)
    meter.report(1.0, finished=True)
    return load(os.fspath(out_dir))


def _run_local(
    source: Any, store: Store, settings: dict[str, Any], runner: Runner, meter: Meter, batch_size: int
) -> int:
    n_shards = 0
    before = 0.0  # the fraction of the input read before this shard
    for shard, records in shards_of(source, settings["shard_size"], settings["limit"]):
        n_shards = shard + 1
        after = source.fraction()
        if shard_is_complete(store, shard, len(records)):
            meter.records += len(records)
            meter.resumed += len(records)
            meter.start_fraction = before = after
            continue
        todo = max(1, sum(r.skip is None for r in records))

        def step(done: int, start: float = before, end: float = after, todo: int = todo) -> None:
            meter.report(start + (end - start) * min(done / todo, 1.0), done)

        table = process_shard(runner, records, max_tokens=settings["max_tokens"], batch_size=batch_size, progress=step)
        store.write_table(part_name(shard), table)
        meter.records += len(records)
        meter.analysed += table.column("skip").null_count
        meter.report(after)
        before = after
    return n_shards
