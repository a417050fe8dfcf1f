"""Models trained in the Training lab, offered in the sidebar under a reserved name ("trained:...")
to the session that trained them only; another session that sees the name gets "no longer
available". Module state (never st.cache_*), bounded: PER_SESSION a session, MAX_MODELS in all.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..streamlit_adapter import session_id

if TYPE_CHECKING:  # annotations only: the sidebar imports this module before torch is needed
    from ...models import Runner

PREFIX = "trained:"
PER_SESSION = 3  # a visitor comparing runs keeps the last three
MAX_MODELS = 64  # process-wide; each is well under a megabyte at the lab's sizes


@dataclass(frozen=True)
class Trained:
    runner: Runner
    task: str
    layers: int
    heads: int
    step: int
    probe: str  # the probe input as text (the explorer opens on it)


_MODELS: OrderedDict[tuple[str, str], Trained] = OrderedDict()  # (session, name) -> model
_LOCK = threading.Lock()


def is_trained(name: object) -> bool:
    return isinstance(name, str) and name.startswith(PREFIX)


def add(session: str, model: Trained) -> str:
    """Register a trained model for `session`; returns its reserved name (also its runner's name)."""
    name = f"{PREFIX}{model.task}-{secrets.token_hex(4)}"
    model.runner.name = name
    with _LOCK:
        _MODELS[(session, name)] = model
        mine = [key for key in _MODELS if key[0] == session]
        for key in mine[:-PER_SESSION]:
            del _MODELS[key]
        while len(_MODELS) > MAX_MODELS:
            _MODELS.popitem(last=False)
    return name


def trained(name: str, session: str | None = None) -> Trained | None:
    with _LOCK:
        hit = _MODELS.get((session or session_id(), name))
        if hit is not None:
            _MODELS.move_to_end((session or session_id(), name))
        return hit


def get(name: str, session: str | None = None) -> Runner | None:
    """This session's trained model of that name, or None (never another session's)."""
    hit = trained(name, session)
    return None if hit is None else hit.runner


def owns(name: str, session: str | None = None) -> bool:
    return is_trained(name) and trained(name, session) is not None


def names(session: str | None = None) -> list[str]:
    """This session's trained models, oldest first."""
    session = session or session_id()
    with _LOCK:
        return [name for s, name in _MODELS if s == session]


def drop(session: str) -> None:
    """Forget every model of a session that has gone."""
    with _LOCK:
        for key in [k for k in _MODELS if k[0] == session]:
            del _MODELS[key]
