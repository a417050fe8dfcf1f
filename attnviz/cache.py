"""A thread-safe LRU cache bounded by entries and by bytes, for analysis results.

One 512-token result of a 6 x 12 model is 6*12*512*512*4 bytes = 75 MB, so entries alone do not
bound memory. The app holds one per process (st.cache_resource): st.cache_data would pickle-copy
every result on each rerun.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import fields, is_dataclass
from typing import Any, TypeVar

import numpy as np

__all__ = ["DEFAULT_CACHE_ENTRIES", "DEFAULT_CACHE_MB", "ResultCache", "nbytes"]

DEFAULT_CACHE_MB = 128  # one 512-token result of a 6 x 12 model is 75 MB; a server stays under ~1 GB
DEFAULT_CACHE_ENTRIES = 32

T = TypeVar("T")


def nbytes(value: Any) -> int:
    """Bytes held by numpy arrays inside `value` (dataclasses, dicts, lists, tuples)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if is_dataclass(value) and not isinstance(value, type):
        return sum(nbytes(getattr(value, f.name)) for f in fields(value)) + 64
    if isinstance(value, dict):
        return sum(nbytes(v) for v in value.values()) + 64
    if isinstance(value, (list, tuple)):
        return sum(nbytes(v) for v in value[:1000]) + 8 * len(value)
    if isinstance(value, str):
        return len(value)
    return 64


class ResultCache:
    """get_or_compute(key, fn): one computation per key at a time (others wait for it)."""

    def __init__(self, max_entries: int = DEFAULT_CACHE_ENTRIES, max_bytes: int = DEFAULT_CACHE_MB * 2**20):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._key_locks: dict[Hashable, threading.Lock] = {}

    def __len__(self) -> int:
        return len(self._items)

    @property
    def bytes(self) -> int:
        return self._bytes

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key][0]

    def put(self, key: Hashable, value: Any) -> None:
        size = nbytes(value)
        with self._lock:
            if key in self._items:
                self._bytes -= self._items.pop(key)[1]
            if size > self.max_bytes or self.max_entries <= 0:
                return  # too large to keep: computed, returned, not cached
            self._items[key] = (value, size)
            self._bytes += size
            while len(self._items) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, s) = self._items.popitem(last=False)
                self._bytes -= s

    def get_or_compute(self, key: Hashable, compute: Callable[[], T]) -> T:
        hit = self.get(key)
        if hit is not None:
            return hit
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            hit = self.get(key)
            if hit is not None:
                return hit
            try:
                value = compute()
                self.put(key, value)
                return value
            finally:
                with self._lock:
                    self._key_locks.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
