"""Past its memory budget the server gives back (app/server/registry.py `relieve`): the cached
results go first, then the least recently used models, never the most recent one, while the
resident memory (read from /proc, not counted by the app) stays above the budget; and a page
run's end or a memory reading under load starts it (app/server/budget.py)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from attnviz.app.server import budget, registry
from attnviz.config import Settings
from attnviz.models import gate

MB = 2**20


class _Weights:
    """A stand-in for a loaded model: `mb` of memory that is its alone."""

    def __init__(self, mb: int) -> None:
        self.array = np.ones(mb * MB, dtype=np.uint8)


@pytest.fixture
def emptied(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The registry and the result caches as a server holds them, emptied for the test and put
    back after (other tests of this worker keep their loaded models)."""
    if gate.rss_mb() == 0:
        pytest.skip("no /proc: no resident memory to read")
    models, sizes = OrderedDict(registry.REGISTRY.models), dict(registry.REGISTRY.sizes)
    results = dict(registry._RESULTS)
    registry.REGISTRY.models.clear()
    registry._RESULTS.clear()
    monkeypatch.setattr(registry, "_RELIEVED", [float("-inf")])
    yield registry
    registry.REGISTRY.models.clear()
    registry.REGISTRY.models.update(models)
    registry.REGISTRY.sizes.clear()
    registry.REGISTRY.sizes.update(sizes)
    registry._RESULTS.clear()
    registry._RESULTS.update(results)


def _fill_cache(mb: int) -> Any:
    cache = registry.results(Settings(cache_mb=4 * mb))
    for i in range(4):
        cache.put(("result", i), np.ones(mb // 4 * MB, dtype=np.uint8))
    return cache


def test_cached_results_go_first_and_the_models_stay_when_that_is_enough(emptied: Any) -> None:
    for name in ("a", "b"):
        registry.REGISTRY.models[(name,)] = _Weights(40)  # type: ignore[assignment]
    cache = _fill_cache(400)
    before = gate.rss_mb()
    after = registry.relieve(before - 200, gate.rss_mb)
    assert len(cache) == 0 and cache.bytes == 0
    assert after < before - 300, (before, after)  # the results' 400 MB went back to the system
    assert list(registry.REGISTRY.models) == [("a",), ("b",)]  # under the budget: no model dropped


def test_then_the_least_recently_used_models_go_but_never_the_last(emptied: Any) -> None:
    for name in ("old", "middle", "recent"):
        registry.REGISTRY.models[(name,)] = _Weights(150)  # type: ignore[assignment]
    before = gate.rss_mb()
    after = registry.relieve(before - 200, gate.rss_mb)  # two models' worth over
    assert list(registry.REGISTRY.models) == [("recent",)]
    assert after < before - 250, (before, after)
    registry.REGISTRY.models[("new",)] = _Weights(150)  # type: ignore[assignment]
    assert registry.relieve(0, gate.rss_mb) > 0  # within RELIEF_EVERY_S: nothing more goes
    assert list(registry.REGISTRY.models) == [("recent",), ("new",)]


def test_a_page_runs_end_past_the_budget_gives_back(emptied: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = _fill_cache(200)
    monkeypatch.setattr(gate, "memory_budget_mb", lambda: gate.rss_mb() - 100)
    with budget.page_turn("relief-visitor"):
        pass
    assert len(cache) == 0
