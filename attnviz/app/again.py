"""A page's result got again when one of its downloads is clicked. Streamlit keeps a download
button's callable for the session's next run, and one holding an `Attention` would keep it out of
the result cache's bound; an `Again` keeps the cache's keys and a weak reference, and recomputes a
miss as the page did, charged to its visitor. It runs with no script run: no Streamlit here."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, TypeVar

from ..config import Settings
from ..models import gate
from ..result import Attention
from . import runners
from .runners import Loaded
from .server import visitor
from .server.registry import results
from .state import Ctx

T = TypeVar("T")
# A result cache key (None: not kept, only made) and how to make its value from the step before's.
Step = tuple[Hashable | None, Callable[[Any], Any]]


@dataclass(frozen=True)
class Again:
    """`again()`: the value of the last step, the same object while anything else holds it."""

    settings: Settings
    visitor: str
    steps: tuple[Step, ...]
    held: Callable[[], Any] = lambda: None  # a weak reference to the last value

    def holding(self, value: Any) -> Again:
        """The same steps, `value` (their result, which the page has now) held weakly."""
        return replace(self, held=weakref.ref(value))

    def __call__(self) -> Any:
        value = self.held()
        if value is not None:
            return value
        cache = results(self.settings)
        with gate.visiting(self.visitor):  # no script run here: the passes are charged to the page's visitor
            for key, make in self.steps:
                step = partial(make, value)
                value = step() if key is None else cache.get_or_compute(key, step)
        return value


def model_of(context: Ctx, loaded: Loaded) -> Callable[[], Loaded]:
    """How to get the page's model again: from the registry by its key (rebuilt if dropped), so
    that a download never keeps a model the registry let go; a model trained in this session
    (not in the registry) is its session's already."""
    if len(loaded.key) != 3:  # session_models' (name,): the session holds the runner anyway
        return partial(Loaded, loaded.runner, loaded.key)
    return partial(runners.model_again, context, loaded.key, visitor.visitor())


def first(context: Ctx, loaded: Loaded, text: str, att: Attention, view: tuple[bool, bool]) -> Again:
    """The explorer's analysis of `text` (`runners.analyse` with the `view` switches), `att`."""
    key = runners.result_key(context, loaded, "attend", text)
    model = model_of(context, loaded)
    steps: tuple[Step, ...] = ((key, lambda _before: runners.attend_views(context, model(), text)),)
    if any(view):  # runners.analyse's second key
        steps += ((runners.result_key(context, loaded, "view", text, *view), partial(runners.viewed, *view)),)
    return Again(context.settings, visitor.visitor(), steps).holding(att)


def step(context: Ctx, back: Again, key: Hashable, make: Callable[[Any], T], before: Any) -> tuple[T, Again]:
    """`make(before)` through the result cache under `key` (`runners.result_key`), and `back`
    with it as one more step, its value held."""
    value = results(context.settings).get_or_compute(key, partial(make, before))
    return value, replace(back, steps=(*back.steps, (key, make)), held=weakref.ref(value))
