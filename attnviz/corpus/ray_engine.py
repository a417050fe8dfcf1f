"""The Ray engine: the same shards and the same `process_shard`, run by Ray Data.

The driver writes each shard still to do as `shards/input-NNNNNN.parquet`; `map_batches` hands
shard numbers to a pool of actors, each loading the model once and writing its shards' results.
Ray is optional (`pip install "attnviz[ray]"`) and imported only here; without an address (or
RAY_ADDRESS) it is started on this machine. The output folder must be reachable from every
worker under the same name: a shared disk or an object store URI on a cluster (docs/CORPUS.md).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .readers import Record
from .shards import input_name, part_name, process_shard, shard_is_complete, shards_of
from .store import Store

if TYPE_CHECKING:
    from .progress import Meter
    from .readers import Source

PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


class ShardWorker:
    """A Ray Data actor: the model, loaded once; each call analyses the shards it is handed."""

    def __init__(self, location: str, model: str, device: str, max_tokens: int, batch_size: int):
        from ..models import load_model

        self.store = Store(location)
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.runner = load_model(model, device, max_tokens=max_tokens)

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {"shard": [], "records": [], "analysed": []}
        for shard in (int(s) for s in batch["shard"]):
            records = [Record(**row) for row in self.store.read_table(input_name(shard)).to_pylist()]
            result = process_shard(self.runner, records, max_tokens=self.max_tokens, batch_size=self.batch_size)
            self.store.write_table(part_name(shard), result)
            out["shard"].append(shard)
            out["records"].append(len(records))
            out["analysed"].append(result.column("skip").null_count)
        return out


def _plan(source: Source, store: Store, settings: dict[str, Any], meter: Meter) -> tuple[int, list[tuple[int, int]]]:
    """Read the input once: the number of shards, and (shard, records) of each still to do,
    whose records are written for the workers to read."""
    import pyarrow as pa

    schema = pa.schema([("id", pa.int64()), ("text", pa.string()), ("skip", pa.string())])
    pending: list[tuple[int, int]] = []
    n_shards = 0
    for shard, records in shards_of(source, settings["shard_size"], settings["limit"]):
        n_shards = shard + 1
        if shard_is_complete(store, shard, len(records)):
            meter.records += len(records)
            meter.resumed += len(records)
            continue
        store.write_table(input_name(shard), pa.Table.from_pylist([vars(r) for r in records], schema=schema))
        pending.append((shard, len(records)))
    return n_shards, pending


def _start(address: str | None) -> bool:
    """Join the cluster at `address` (or RAY_ADDRESS), or start Ray on this machine. True if
    this call started it (and so must shut it down)."""
    import ray

    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or None
    rest = os.environ.get("PYTHONPATH", "")
    path = PACKAGE_PARENT + (os.pathsep + rest if rest else "")  # workers started here: this checkout first
    runtime_env = None if address else {"env_vars": {"PYTHONPATH": path}}
    ray.init(
        address=address,
        runtime_env=runtime_env,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
        configure_logging=True,
    )
    return True


def _workers(device: str, shards: int) -> dict[str, Any]:
    """map_batches resources: one actor per GPU when there are GPUs and the device allows it,
    else one actor per CPU; never more actors than shards (each loads the model)."""
    import ray

    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    cpus = max(1, int(resources.get("CPU", 1)))
    wants_gpu = device == "auto" or device.startswith("cuda")
    if device.startswith("cuda") and gpus == 0:
        raise ValueError("device 'cuda' was requested but the Ray cluster has no GPU; use 'cpu' or 'auto'")
    if wants_gpu and gpus:
        return {"concurrency": min(gpus, shards), "num_gpus": 1, "num_cpus": 1}
    return {"concurrency": min(cpus, shards), "num_cpus": 1}


def run_ray(
    source: Source,
    store: Store,
    settings: dict[str, Any],
    meter: Meter,
    *,
    batch_size: int,
    device: str,
    address: str | None = None,
) -> int:
    """Run the shards still to do on Ray; the number of shards of the input."""
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise ValueError("the Ray engine needs Ray: pip install 'attnviz[ray]' (or -r requirements-ray.txt)") from exc
    n_shards, pending = _plan(source, store, settings, meter)
    total = meter.records + sum(n for _, n in pending)
    meter.start_fraction = meter.records / max(1, total)
    if not pending:
        return n_shards
    started = _start(address)
    try:
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        context.print_on_execution_start = False
        logging.getLogger("ray.data").setLevel(logging.ERROR)
        shards = ray.data.from_items([{"shard": s} for s, _ in pending], override_num_blocks=len(pending))
        done = shards.map_batches(
            ShardWorker,
            fn_constructor_kwargs={
                "location": store.location if "://" in store.location else store.root,  # as a worker opens it
                "model": settings["model"],
                "device": device,
                "max_tokens": settings["max_tokens"],
                "batch_size": batch_size,
            },
            batch_size=1,
            **_workers(device, len(pending)),
        )
        for row in done.iter_rows():
            meter.records += int(row["records"])
            meter.analysed += int(row["analysed"])
            meter.report(meter.records / total)
    finally:
        if started:
            ray.shutdown()
    return n_shards
