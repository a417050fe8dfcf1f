"""Loading models and analysing text in the page: spinners, readable errors, notices. The
process-wide state behind it (registry, failed loads, result cache) is app/server/registry.py."""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from functools import partial
from typing import Any, TypeVar, cast

import streamlit as st
import torch

from ..models import EMBEDDED_MODEL, ModelLoadError, Runner, gate
from ..models.tokens import TextRefused, check_text
from ..result import OOM_CPU, Attention, note_key
from .server import session_models, visitor
from .server.registry import REGISTRY, Loaded, ModelKey, load, results
from .state import Ctx, t
from .streamlit_adapter import DeltaGenerator
from .widgets import escape_md, failed, show_error

LOG = logging.getLogger("attnviz")
T = TypeVar("T")


def load_runner(context: Ctx, name: str | None = None, *, fallback: bool = True, **opts: object) -> Loaded | None:
    """The runner for `name` (default: the sidebar's model) and its key, loaded once per
    process. A model that cannot be loaded gives a readable error and, with `fallback`, the
    embedded model instead; None only if even that fails."""
    name = name or context.model
    if session_models.is_trained(name):  # trained in the Training lab: this session's own model
        runner = session_models.get(name)
        return Loaded(runner, (name,)) if runner is not None else _failed(context, name, fallback, t("train.gone"))
    if name != "scratch":
        opts = {}
    key: ModelKey = (name, context.device, tuple(sorted(opts.items())))
    place: list[DeltaGenerator] = []
    remember = True

    def waiting(ticket: gate.Ticket) -> None:  # shown only while it waits its turn
        if not place:
            place.append(st.empty())
        place[0].caption(t("fair.queued", place=ticket.place))

    def admitted() -> None:
        for note in place:
            note.empty()

    try:
        context.settings.check_model(name)  # an allow-list and the name rules refuse before any loading
        failed = REGISTRY.failed(key)
        if failed is not None:
            raise ModelLoadError(failed)
        build = partial(build_model, context, name, opts, visitor.visitor(), wait=waiting, admitted=admitted)
        with st.spinner(t("spinner.loading", name=escape_md(name))):
            runner = REGISTRY.get(key, build, context.settings.models_mb * 2**20)  # LRU past the setting
        return Loaded(runner, key)
    except gate.OutOfMemory:  # refused while the server is past its memory budget: no failed load
        reason, remember = t("fair.no_memory"), False
        admitted()
    except ModelLoadError as exc:
        reason = exc.public  # never the server's paths or whether a folder exists
    except ValueError as exc:
        reason = str(exc)
    except Exception as exc:  # torch / transformers internals: still a message, not a traceback
        LOG.warning("attnviz: loading %.80r failed: %s: %.300s", name, type(exc).__name__, exc)
        reason = t("err.unexpected_load")
    if remember:
        REGISTRY.remember_failure(key, reason)
    return _failed(context, name, fallback, reason)


def _failed(context: Ctx, name: str, fallback: bool, reason: str) -> Loaded | None:
    """A model that could not be had: its error, then (with `fallback`) the embedded model."""
    falls_back = fallback and name != EMBEDDED_MODEL
    message = t("err.model_failed_fallback", model=t("model.minilm")) if falls_back else t("err.model_failed")
    show_error(message, reason)
    return load_runner(context, EMBEDDED_MODEL, fallback=False) if falls_back else None


def build_model(
    context: Ctx,
    name: str,
    opts: dict[str, object],
    who: str,
    *,
    wait: Callable[[gate.Ticket], None] | None = None,
    admitted: Callable[[], None] = lambda: None,
) -> Runner:
    """A model build is heavy work: queued (`wait` while it waits), charged to its visitor."""
    with gate.heavy(who, wait=wait, size_mb=REGISTRY.known_mb(name)), gate.charged(who):
        admitted()
        return load(name, context.device, context.settings.max_tokens, opts)


def model_again(context: Ctx, key: ModelKey, who: str) -> Loaded:
    """The model of `key` (a registry key of `load_runner`), built again as the page builds it
    when the registry has dropped it; no Streamlit call (a download's click runs without a page)."""
    name, _device, opts = key
    options: dict[str, object] = dict(cast("tuple[tuple[str, object], ...]", opts))  # load_runner's sorted items
    build = partial(build_model, context, str(name), options, who)
    return Loaded(REGISTRY.get(key, build, context.settings.models_mb * 2**20), key)


def checked_text(context: Ctx, text: str | None) -> str | None:
    """The text if it can be analysed (`models.tokens.check_text`); otherwise a readable error,
    limits named, and None."""
    try:
        return check_text(text or "", context.settings.max_chars)
    except TextRefused as exc:
        refused(exc)
        return None


def refused(exc: ValueError) -> None:
    """A refused input in the page: a text check's reason in the visitor's language, any other
    refusal under "this text cannot be analysed" with its own words."""
    if isinstance(exc, TextRefused):
        show_error(t(exc.key, **exc.values))
    else:
        show_error(t("err.bad_input"), str(exc))


def result_key(context: Ctx, loaded: Loaded, kind: str, text: str, *parts: Hashable) -> tuple[Hashable, ...]:
    """The result cache's key of what `kind` made of `text` through the model (`parts`: its switches)."""
    return (kind, loaded.key, text, context.max_tokens, *parts)


def cached(context: Ctx, loaded: Loaded, kind: str, text: str, *parts: Hashable, fn: Callable[[], T]) -> T:
    """`fn()` through the result cache, keyed by what produced it."""
    return results(context.settings).get_or_compute(result_key(context, loaded, kind, text, *parts), fn)


def peek(context: Ctx, loaded: Loaded, kind: str, text: str, *parts: Hashable) -> Any | None:
    """What `cached` would return without computing anything; None on a miss."""
    return results(context.settings).get(result_key(context, loaded, kind, text, *parts))


def attend_views(context: Ctx, loaded: Loaded, text: str) -> Attention:
    """The views' forward pass; its value norms go into the result cache under the hide-sinks
    switch's key (`value_norms`), so that switch needs no second forward."""
    from ..explain import attend_keeping_values  # not on the import path of a cold start's frame

    att, values = attend_keeping_values(loaded.runner, text, context.max_tokens)
    if values is not None:  # their norms are made when the switch asks, after the views are sent
        results(context.settings).put(result_key(context, loaded, "value_norms", text), values)
    return att


def analyse(
    context: Ctx, loaded: Loaded, text: str, *, hide_special: bool = False, merge_words: bool = False
) -> Attention | None:
    """Attention of `text` from the bounded result cache, special tokens hidden and word pieces
    merged on request; None after showing an error. A CPU fallback after the accelerator ran out
    of memory says so."""
    try:
        with st.spinner(t("spinner.running", n=f"{len(text):,}")):
            att = cached(context, loaded, "attend", text, fn=lambda: attend_views(context, loaded, text))
    except torch.OutOfMemoryError:
        show_error(t("err.oom_cpu"))
        return None
    except ValueError as exc:
        refused(exc)
        return None
    except ModelLoadError as exc:
        show_error(t("err.no_attention"), exc.public)
        return None
    except Exception as exc:
        failed("attend", exc)
        return None
    for note in att.notes:
        st.info(t("notice.oom_fallback") if note_key(note) == OOM_CPU else note, icon=":material/info:")
    if not (hide_special or merge_words):
        return att
    return cached(
        context, loaded, "view", text, hide_special, merge_words, fn=partial(viewed, hide_special, merge_words, att)
    )


def viewed(hide_special: bool, merge_words: bool, att: Attention) -> Attention:
    """`att` with special tokens hidden and word pieces merged, as asked."""
    out = att.without_special() if hide_special else att
    return out.merge_words() if merge_words else out
