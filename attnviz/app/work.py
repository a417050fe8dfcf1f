"""Long work in the page: its place in the server-wide queue (attnviz/models/gate.py), a progress
bar and a Cancel button. Each piece carries an estimate of its memory (`attention_mb`), which a
server past its memory budget refuses (models/admission.py); `progress(fraction)` is a Streamlit
call, so Cancel or a closed tab stops the run between two batches."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

import streamlit as st

from ..models import Progress, gate
from . import runners
from .server import budget, visitor
from .state import Ctx, t
from .widgets import show_error

T = TypeVar("T")


def _cancel(key: Hashable) -> None:
    st.session_state.setdefault("_cancelled", set()).add(key)


def _again(key: Hashable) -> None:
    st.session_state.setdefault("_cancelled", set()).discard(key)


def attention_mb(layers: int, heads: int, text: str, max_tokens: int) -> float:
    """An upper bound, in MB, of one forward's attention maps of `text` in float32, (layers,
    heads, n, n): what a result of it holds (ATTNVIZ_CACHE_MB's "a 512-token result of a 6 x 12
    model is 75 MB"). No tokenizer makes more tokens than the text's UTF-8 bytes (byte-level BPE
    at worst one a byte) besides two special ones, and none past `max_tokens`."""
    n = min(max_tokens, len(text.encode("utf-8")) + 2)
    return layers * heads * n * n * 4 / 2**20


def run_long(context: Ctx, key: Hashable, label: str, fn: Callable[[Progress], T], *, size_mb: float = 0.0) -> T | None:
    """Run `fn(progress)` in its turn, with its place while it waits, a progress bar and a
    Cancel button. None (with a message) when cancelled or not yet asked again after a cancel, or
    when the server, past its memory budget, refused it (`size_mb`: its estimate; 0 never is)."""
    cancelled = st.session_state.setdefault("_cancelled", set())
    if key in cancelled:
        st.info(t("work.cancelled"), icon=":material/stop_circle:")
        st.button(t("work.again"), key=f"again_{abs(hash(key))}", on_click=_again, args=(key,))
        return None
    who = visitor.visitor()
    over = budget.left(context.settings.budget_s, who) <= 0
    bar = st.progress(0.0, text=label)
    stop = st.empty()
    stop.button(t("work.cancel"), key=f"cancel_{abs(hash(key))}", on_click=_cancel, args=(key,))
    note = st.empty()

    def waiting(ticket: gate.Ticket) -> None:  # a Streamlit call: a click or a closed tab stops here
        note.caption(t("fair.queued", place=ticket.place))

    def progress(fraction: float) -> None:
        bar.progress(min(max(float(fraction), 0.0), 1.0), text=label)

    try:
        with visitor.aside(), gate.heavy(who, wait=waiting, size_mb=size_mb):  # no page run's place held meanwhile
            if over:  # the notice stays while it runs: it says why it waited
                note.caption(t("fair.over_share", minutes=int(budget.BUDGET_WINDOW_S // 60)))
            else:
                note.empty()
            return fn(progress)
    except Exception as exc:  # a refusal or a failure: its message is not left under a progress line and a Cancel
        note.empty()
        if not isinstance(exc, gate.OutOfMemory):
            raise
        show_error(t("fair.no_memory"))
        return None
    finally:
        bar.empty()
        stop.empty()


class _NotComputed(Exception):
    """Cancelled: nothing to keep in the result cache."""


def cached_long(
    context: Ctx,
    loaded: runners.Loaded,
    kind: str,
    text: str,
    *parts: Hashable,
    label: str,
    fn: Callable[[Progress], T],
) -> T | None:
    """`fn(progress)` through the result cache; on a miss it runs under `run_long`. None when
    it was cancelled (and then nothing is cached)."""
    runner = loaded.runner
    size_mb = attention_mb(runner.n_layers, runner.n_heads, text, context.max_tokens)

    def compute() -> T:
        value = run_long(context, (kind, loaded.key, text, *parts), label, fn, size_mb=size_mb)
        if value is None:
            raise _NotComputed
        return value

    hit = runners.peek(context, loaded, kind, text, *parts)
    if hit is not None:
        return hit
    try:  # aside from the cache's lock on: a run that waits for another's same result holds no place
        with visitor.aside():
            return runners.cached(context, loaded, kind, text, *parts, fn=compute)
    except _NotComputed:
        return None
