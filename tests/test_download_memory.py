"""A tab's download buttons keep no attention result (app/again.py): Streamlit holds a button's
callable until the session's next run or its end, 120 s after its tab closed, and a callable that
held the result kept it past the result cache's bound and every memory relief (168 MB for SmolLM2
at 404 tokens). A click after the cache let the result go computes it again: the same bytes."""

from __future__ import annotations

import gc
import re
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from streamlit.elements.widgets import button
from streamlit.testing.v1 import AppTest

from attnviz import explain
from attnviz.app import runners
from attnviz.app.server.registry import _RESULTS

APP = str(Path(__file__).resolve().parent / "app_entry.py")
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_deployment")]


def _recorded(monkeypatch: pytest.MonkeyPatch) -> tuple[list[weakref.ref[Any]], dict[str, Callable[[], Any]]]:
    """Weak references to every forward's attention, and every download button's callable by its
    element id (the latest run's), as Streamlit's runtime would keep them."""
    made: list[weakref.ref[Any]] = []
    kept: dict[str, Callable[[], Any]] = {}
    attend, ablate, marshall = runners.attend_views, explain.ablate, button.marshall_file

    def attending(*args: Any) -> Any:
        att = attend(*args)
        made.append(weakref.ref(att))
        return att

    def marshalling(coordinates: str, data: Any, *args: Any, **kwargs: Any) -> None:
        if callable(data):
            kept[kwargs.get("element_id") or coordinates] = data
        marshall(coordinates, data, *args, **kwargs)

    def ablating(*args: Any, **kwargs: Any) -> Any:  # heads off: the views draw the switched model's
        result = ablate(*args, **kwargs)
        made.append(weakref.ref(result.attention))
        return result

    monkeypatch.setattr(runners, "attend_views", attending)
    monkeypatch.setattr(explain, "ablate", ablating)
    monkeypatch.setattr(button, "marshall_file", marshalling)
    return made, kept


# Plotly's random div id, and the hash of the page's script that names it (its CSP)
RANDOM = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|'sha256-[A-Za-z0-9+/=]+'")


def _clicks(kept: dict[str, Callable[[], Any]]) -> dict[str, bytes]:
    """Each button's file, what an HTML page draws at random made one."""
    files = {key: make() for key, make in kept.items()}
    return {key: RANDOM.sub(b"-", got.encode() if isinstance(got, str) else bytes(got)) for key, got in files.items()}


def _numbers(keys: dict[str, Any]) -> list[str]:
    return sorted(k for k in keys if k.rsplit("-", 1)[-1] in {"dl_csv", "dl_npz", "dl_json", "dl_grid_html"})


def _relieve() -> None:
    """What a memory relief does to results (server/registry.py relieve)."""
    for cache in _RESULTS.values():
        cache.clear()
    gc.collect()


SWITCHES: tuple[dict[str, Any], ...] = (
    {},
    {"hide_special": True},
    {"heads_off": [[2, 3]], "heads_off_model": "minilm"},
    {"hide_special": True, "hide_sinks_on": True, "heads_off": [[0, 1]], "heads_off_model": "minilm"},
)


@pytest.mark.parametrize("switches", SWITCHES)
def test_downloads_hold_no_attention_and_a_click_makes_it_again(
    monkeypatch: pytest.MonkeyPatch, switches: dict[str, bool]
) -> None:
    _relieve()  # an earlier test's same sentence: the page runs its own forward
    made, kept = _recorded(monkeypatch)
    at = AppTest.from_file(APP, default_timeout=180)
    for key, value in switches.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    numbers = _numbers(kept)
    assert len(numbers) == 4, sorted(kept)  # the CSV, NPZ, JSON and the grid's page
    before = _clicks({k: kept[k] for k in numbers})  # the result still in the cache: the page's own
    forwards = len(made)
    assert forwards >= 1 and made[-1]() is not None
    _relieve()
    assert all(ref() is None for ref in made), "a download button still holds the page's attention"
    after = _clicks({k: kept[k] for k in numbers})
    assert len(made) == forwards + 1  # made again, once for the four (the switched model's alone with heads off)
    assert after == before
