"""Where a corpus run writes: a folder on the local disk or on any filesystem pyarrow knows
(`s3://bucket/run`, `gs://...`, `hdfs://...`, `file:///...`).

Every file is written whole or not at all (a temporary name, fsync'ed on a local disk, renamed),
so a rerun finds complete shards, never half of one.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa


class Store:
    """A folder to write a run into. `location` is a local path or a URI pyarrow can open."""

    def __init__(self, location: str | os.PathLike[str]):
        import pyarrow.fs as pafs

        self.location = os.fspath(location)
        if "://" in self.location:
            self.fs, self.root = pafs.FileSystem.from_uri(self.location)
        else:
            self.fs, self.root = pafs.LocalFileSystem(), str(Path(self.location).expanduser().absolute())
        self.local = isinstance(self.fs, pafs.LocalFileSystem)
        self.fs.create_dir(self.root, recursive=True)

    def path(self, name: str) -> str:
        return f"{self.root.rstrip('/')}/{name}"

    def exists(self, name: str) -> bool:
        import pyarrow.fs as pafs

        return bool(self.fs.get_file_info(self.path(name)).type != pafs.FileType.NotFound)

    def read_bytes(self, name: str) -> bytes | None:
        if not self.exists(name):
            return None
        with self.fs.open_input_stream(self.path(name)) as fh:
            return bytes(fh.read())

    def read_table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        import pyarrow.parquet as pq

        return pq.read_table(self.path(name), columns=columns, filesystem=self.fs)

    def write_bytes(self, name: str, data: bytes) -> None:
        with self.writing(name) as tmp, self.fs.open_output_stream(tmp) as out:
            out.write(data)

    def write_table(self, name: str, table: pa.Table) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd")
        self.write_bytes(name, sink.getvalue().to_pybytes())

    @contextlib.contextmanager
    def writing(self, name: str) -> Iterator[str]:
        """A temporary path to write `name` to; renamed into place when the block ends well."""
        final = self.path(name)
        parent = final.rsplit("/", 1)[0]
        self.fs.create_dir(parent, recursive=True)
        tmp = f"{parent}/.{final.rsplit('/', 1)[1]}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            yield tmp
            if self.local:
                _fsync_file(tmp)
            self.fs.move(tmp, final)
            if self.local:
                with contextlib.suppress(OSError):  # not every OS lets a directory be fsync'ed
                    _fsync_file(parent)
        except BaseException:
            with contextlib.suppress(Exception):
                self.fs.delete_file(tmp)
            raise

    def remove(self, name: str) -> None:
        """Delete the folder `name` with what it holds, if it is there."""
        if self.exists(name):
            self.fs.delete_dir(self.path(name))


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
