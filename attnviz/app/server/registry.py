"""Models and results for every visitor of one server process (no Streamlit here: app/runners.py
shows loading and its errors). They live in module state, bounded, never in a Streamlit cache:
any client can send `clear_cache`, and what guards memory (the models that carry the gates of
attnviz.models.gate) must not be something a visitor can drop. At most MAX_MODELS models, of them
MAX_RANDOM random-weight Lab encoders (a visitor stepping through seeds evicts their own last
seed), within ATTNVIZ_MODELS_MB when set; the least recently used go first, never the one just loaded.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import NamedTuple

import torch

from ...cache import ResultCache
from ...config import Settings
from ...models import Runner, gate, load_model
from .spending import newest

LOG = logging.getLogger("attnviz")
MAX_MODELS = 6  # ~90 MB each for MiniLM-sized models; scratch variants share one copy of the weights
MAX_RANDOM = 2  # of which random-weight Lab encoders (one per seed)
MAX_FAILURES = 64  # failed model names remembered (each a short message), oldest first out
FAILED_LOAD_TTL_S = 60.0  # a model that failed to load is not retried on every rerun for this long
RELIEF_EVERY_S = 5.0  # a server past its budget gives back at most this often (a gc and a cache each)

ModelKey = tuple[Hashable, ...]


class Loaded(NamedTuple):
    runner: Runner
    key: ModelKey


def model_bytes(runner: object) -> int:
    """Bytes of the weights and buffers a runner holds (its torch modules), each storage once:
    tied embeddings and shared weights count once."""
    seen: dict[int, int] = {}
    for value in getattr(runner, "__dict__", {}).values():
        if isinstance(value, torch.nn.Module):
            for tensor in (*value.parameters(), *value.buffers()):
                storage = tensor.untyped_storage()
                seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


def is_random(key: ModelKey) -> bool:
    """A Lab encoder with random weights (its key's options say so)."""
    opts = key[2] if len(key) > 2 and isinstance(key[2], tuple) else ()
    return ("weights", "random") in opts


class _Registry:
    """Loaded models by key, at most MAX_MODELS (least recently used out; at most MAX_RANDOM
    random-weight ones, and within `limit_bytes` of weights when a load asks for it), one load per
    key at a time; and failed loads by key, at most MAX_FAILURES, each forgotten after its TTL."""

    def __init__(self) -> None:
        self.models: OrderedDict[ModelKey, Runner] = OrderedDict()
        self.sizes: dict[ModelKey, int] = {}  # bytes of each loaded model's weights
        self.measured: OrderedDict[Hashable, float] = OrderedDict()  # MB by name, kept after a drop
        self.failures: OrderedDict[ModelKey, tuple[float, str]] = OrderedDict()
        self.lock = threading.Lock()
        self.loading: dict[ModelKey, threading.Lock] = {}
        self.loads = 0  # models built since the process started (the load test reads it)

    def get(self, key: ModelKey, load: Callable[[], Runner], limit_bytes: int = 0) -> Runner:
        """The model of `key`, loaded by `load()` on a miss; after a load, the least recently
        used others are dropped while all together hold more than `limit_bytes` (0: no limit)."""
        with self.lock:
            if key in self.models:
                self.models.move_to_end(key)
                return self.models[key]
            key_lock = self.loading.setdefault(key, threading.Lock())
        with key_lock:
            with self.lock:
                if key in self.models:
                    return self.models[key]
            runner = load()
            size = model_bytes(runner)
            with self.lock:
                self.loads += 1
                self.models[key] = runner
                self.sizes[key] = size
                newest(self.measured, key[0], size / 2**20, MAX_FAILURES)
                self._bound(key, limit_bytes)
                self.loading.pop(key, None)
            return runner

    def _bound(self, new: ModelKey, limit_bytes: int) -> None:
        """Under lock: the oldest random-weight models beyond MAX_RANDOM, then the oldest beyond
        MAX_MODELS, then the oldest while the weights exceed `limit_bytes`; never `new`."""
        randoms = [k for k in self.models if is_random(k)]
        for key in randoms[: max(0, len(randoms) - MAX_RANDOM)]:
            self._drop(key)
        for key in [k for k in self.models if k != new]:
            held = sum(self.sizes.get(k, 0) for k in self.models)
            if len(self.models) <= MAX_MODELS and (limit_bytes <= 0 or held <= limit_bytes):
                break
            self._drop(key)

    def _drop(self, key: ModelKey) -> None:
        del self.models[key]
        self.sizes.pop(key, None)
        LOG.info("attnviz: dropped model %.80r (least recently used)", key[0])

    def known_mb(self, name: Hashable) -> float:
        """The weights of model `name` in MB when it was last loaded (0: never loaded here): a
        rebuild's estimate in the heavy-work queue (models/admission.py)."""
        with self.lock:
            return self.measured.get(name, 0.0)

    def failed(self, key: ModelKey) -> str | None:
        now = time.monotonic()
        with self.lock:
            for old in [k for k, (at, _) in self.failures.items() if now - at >= FAILED_LOAD_TTL_S]:
                del self.failures[old]
            hit = self.failures.get(key)
            return None if hit is None else hit[1]

    def remember_failure(self, key: ModelKey, message: str) -> None:
        with self.lock:
            newest(self.failures, key, (time.monotonic(), message[:500]), MAX_FAILURES)


REGISTRY = _Registry()
_RESULTS: dict[tuple[int, int], ResultCache] = {}
_RESULTS_LOCK = threading.Lock()


def results(settings: Settings) -> ResultCache:
    """The process-wide bounded cache of analysis results."""
    size = (settings.cache_entries, settings.cache_mb * 2**20)
    with _RESULTS_LOCK:
        if size not in _RESULTS:
            _RESULTS.clear()  # settings are read from the environment: one size per process
            _RESULTS[size] = ResultCache(*size)
        return _RESULTS[size]


def load(name: str, device: str, max_tokens: int, opts: dict[str, object]) -> Runner:
    start = time.perf_counter()
    runner = load_model(name, device, max_tokens=max_tokens, **opts)  # type: ignore[arg-type]
    LOG.warning("attnviz: loaded model %.80r on %s in %.1f s", name, runner.device, time.perf_counter() - start)
    return runner


_RELIEVED = [float("-inf")]  # when relieve last ran (monotonic s)


def trim() -> None:
    """Hand freed heap back to the system: glibc keeps what Python, numpy and torch free in its
    arenas (one a thread, and every session's script runs in a thread of its own), and the
    resident memory would not come down. Elsewhere (no glibc) nothing happens."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def relieve(budget_mb: float, rss_mb: Callable[[], float]) -> float:
    """Past the memory budget, give back: the result caches emptied and the freed heap trimmed,
    then the least recently used models dropped while the resident memory stays above
    `budget_mb` (never the most recent one: the page that is running most likely reads it). A
    dropped model a page still holds goes when that page is done. At most once every
    RELIEF_EVERY_S; returns the resident MB after."""
    now = time.monotonic()
    with _RESULTS_LOCK:
        if now - _RELIEVED[0] < RELIEF_EVERY_S:
            return rss_mb()
        _RELIEVED[0] = now
        caches = list(_RESULTS.values())
    before = rss_mb()
    for cache in caches:
        cache.clear()
    gc.collect()
    trim()
    after = rss_mb()
    while after > budget_mb:
        with REGISTRY.lock:
            if len(REGISTRY.models) <= 1:
                break
            REGISTRY._drop(next(iter(REGISTRY.models)))
        gc.collect()
        trim()
        after = rss_mb()
    LOG.warning("attnviz: memory budget %.0f MB, gave back: %.0f -> %.0f MB resident", budget_mb, before, after)
    return after


def _watch() -> None:
    """A server past its budget returns under it with nobody asking too (the last tab closed while
    it was over, say): looked at every RELIEF_EVERY_S, one /proc read."""
    while True:
        time.sleep(RELIEF_EVERY_S)
        budget = gate.memory_budget_mb()
        if budget > 0 and gate.rss_mb() > budget:
            with contextlib.suppress(Exception):  # the watch never dies
                relieve(budget, gate.rss_mb)


# model passes and the heavy-work queue give back through this before they wait or refuse
gate.configure(relieve=lambda budget: relieve(budget, gate.rss_mb))
threading.Thread(target=_watch, name="attnviz-memory-watch", daemon=True).start()
