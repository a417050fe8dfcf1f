"""Models and results for every visitor of one server process.

Models, results and failed loads live in module state, bounded, never in a Streamlit cache:
any client can send `clear_cache` on the websocket, and what guards memory and concurrency
(the forward-pass gates of attnviz.models.gate, the models that carry them) must not be
something a visitor can drop. A cleared Streamlit cache now clears nothing of ours.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import NamedTuple, TypeVar

import streamlit as st
import torch

from ..cache import ResultCache
from ..config import Settings, check_text
from ..models import EMBEDDED_MODEL, ModelLoadError, Runner, load_model
from ..result import OOM_CPU, Attention, note_key
from . import session_models
from .state import Ctx, t
from .widgets import escape_md, show_error

__all__ = ["Loaded", "analyse", "cached", "checked_text", "load_runner", "results"]

LOG = logging.getLogger("attnviz")
MAX_MODELS = 6  # ~90 MB each for MiniLM-sized models; scratch variants share one copy of the weights
MAX_FAILURES = 64  # failed model names remembered (each a short message), oldest first out
FAILED_LOAD_TTL_S = 60.0  # a model that failed to load is not retried on every rerun for this long

ModelKey = tuple[Hashable, ...]
T = TypeVar("T")


class Loaded(NamedTuple):
    runner: Runner
    key: ModelKey


class _Registry:
    """Loaded models by key, at most MAX_MODELS (least recently used out), one load per key at
    a time; and failed loads by key, at most MAX_FAILURES, each forgotten after its TTL."""

    def __init__(self) -> None:
        self.models: OrderedDict[ModelKey, Runner] = OrderedDict()
        self.failures: OrderedDict[ModelKey, tuple[float, str]] = OrderedDict()
        self.lock = threading.Lock()
        self.loading: dict[ModelKey, threading.Lock] = {}

    def get(self, key: ModelKey, load: Callable[[], Runner]) -> Runner:
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
            with self.lock:
                self.models[key] = runner
                while len(self.models) > MAX_MODELS:
                    self.models.popitem(last=False)
                self.loading.pop(key, None)
            return runner

    def failed(self, key: ModelKey) -> str | None:
        now = time.monotonic()
        with self.lock:
            for old in [k for k, (at, _) in self.failures.items() if now - at >= FAILED_LOAD_TTL_S]:
                del self.failures[old]
            hit = self.failures.get(key)
            return None if hit is None else hit[1]

    def remember_failure(self, key: ModelKey, message: str) -> None:
        with self.lock:
            self.failures[key] = (time.monotonic(), message[:500])
            self.failures.move_to_end(key)
            while len(self.failures) > MAX_FAILURES:
                self.failures.popitem(last=False)


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


def _load(name: str, device: str, max_tokens: int, opts: dict[str, object]) -> Runner:
    start = time.perf_counter()
    runner = load_model(name, device, max_tokens=max_tokens, **opts)  # type: ignore[arg-type]
    LOG.warning("attnviz: loaded model %.80r on %s in %.1f s", name, runner.device, time.perf_counter() - start)
    return runner


def load_runner(c: Ctx, name: str | None = None, *, fallback: bool = True, **opts: object) -> Loaded | None:
    """The runner for `name` (default: the sidebar's model) and its key, loaded once per
    process. A model that cannot be loaded gives a readable error and, with `fallback`, the
    embedded model instead; None only if even that fails."""
    name = name or c.model
    if session_models.is_trained(name):  # trained in the Training lab: this session's own model
        runner = session_models.get(name)
        if runner is not None:
            return Loaded(runner, (name,))
        falls_back = fallback and name != EMBEDDED_MODEL
        show_error(t("err.model_failed_fallback", model=t("model.minilm")) if falls_back else t("err.model_failed"),
                   t("train.gone"))  # fmt: skip
        return load_runner(c, EMBEDDED_MODEL, fallback=False) if falls_back else None
    if name != "scratch":
        opts = {}
    key: ModelKey = (name, c.device, tuple(sorted(opts.items())))
    try:
        c.settings.check_model(name)  # an allow-list and the name rules refuse before any loading
        failed = REGISTRY.failed(key)
        if failed is not None:
            raise ModelLoadError(failed)
        with st.spinner(t("spinner.loading", name=escape_md(name))):
            runner = REGISTRY.get(key, lambda: _load(name, c.device, c.settings.max_tokens, opts))
        return Loaded(runner, key)
    except ModelLoadError as exc:
        reason = exc.public  # never the server's paths or whether a folder exists
    except ValueError as exc:
        reason = str(exc)
    except Exception as exc:  # torch / transformers internals: still a message, not a traceback
        LOG.warning("attnviz: loading %.80r failed: %s: %.300s", name, type(exc).__name__, exc)
        reason = t("err.unexpected_load")
    REGISTRY.remember_failure(key, reason)
    falls_back = fallback and name != EMBEDDED_MODEL
    message = t("err.model_failed_fallback", model=t("model.minilm")) if falls_back else t("err.model_failed")
    show_error(message, reason)
    return load_runner(c, EMBEDDED_MODEL, fallback=False) if falls_back else None


def checked_text(c: Ctx, text: str | None) -> str | None:
    """The text if it can be analysed; otherwise a readable error (limits named) and None."""
    text = text or ""
    if not text.strip():
        show_error(t("err.empty"))
        return None
    if len(text) > c.settings.max_chars:
        show_error(t("err.too_long", n=f"{len(text):,}", limit=f"{c.settings.max_chars:,}"))
        return None
    try:
        return check_text(text, c.settings.max_chars)
    except ValueError as exc:
        show_error(t("err.bad_input"), str(exc))
        return None


def cached(c: Ctx, loaded: Loaded, kind: str, text: str, *parts: Hashable, fn: Callable[[], T]) -> T:
    """`fn()` through the result cache, keyed by what produced it."""
    return results(c.settings).get_or_compute((kind, loaded.key, text, c.max_tokens, *parts), fn)


def analyse(
    c: Ctx, loaded: Loaded, text: str, *, hide_special: bool = False, merge_words: bool = False
) -> Attention | None:
    """Attention of `text` from the bounded result cache (the model runs only on a miss), with
    special tokens hidden and word pieces merged on request. None after showing an error.
    A result computed on the CPU after the accelerator ran out of memory says so."""
    try:
        with st.spinner(t("spinner.running", n=f"{len(text):,}")):
            att = cached(c, loaded, "attend", text, fn=lambda: loaded.runner.attend(text, c.max_tokens))
    except torch.OutOfMemoryError:
        show_error(t("err.oom_cpu"))
        return None
    except ValueError as exc:
        show_error(t("err.bad_input"), str(exc))
        return None
    except ModelLoadError as exc:
        show_error(t("err.no_attention"), exc.public)
        return None
    except Exception as exc:  # never a traceback in the page
        LOG.warning("attnviz: attend failed: %s: %.300s", type(exc).__name__, exc)
        show_error(t("err.unexpected"), type(exc).__name__)
        return None
    for note in att.notes:
        st.info(t("notice.oom_fallback") if note_key(note) == OOM_CPU else note, icon=":material/info:")
    if not (hide_special or merge_words):
        return att

    def derive() -> Attention:
        out = att.without_special() if hide_special else att
        return out.merge_words() if merge_words else out

    return cached(c, loaded, "view", text, hide_special, merge_words, fn=derive)
