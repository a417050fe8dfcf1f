"""The cold server's warm-up (app/warmup.py, issue 24): the background thread loads the first
model under the very registry key a new session's page asks for, so the page reuses it."""

from __future__ import annotations

import pytest

from attnviz.app import registry as model_registry
from attnviz.app import warmup
from attnviz.config import Settings


def test_the_warm_up_loads_the_model_a_new_session_asks_for(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = model_registry._Registry()
    monkeypatch.setattr(model_registry, "REGISTRY", registry)
    monkeypatch.setattr(warmup, "_STARTED", [])
    warmup.start(Settings())
    thread = warmup.started()
    assert thread is not None
    warmup.start(Settings())  # once per process
    assert warmup.started() is thread
    thread.join(timeout=300)
    assert not thread.is_alive()
    key = ("minilm", "auto", ())  # runners.load_runner: (name, the sidebar's device, scratch options)
    assert list(registry.models) == [key]
    assert registry.models[key].n_layers == 6


def test_a_demo_without_the_embedded_model_loads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = model_registry._Registry()
    monkeypatch.setattr(model_registry, "REGISTRY", registry)
    monkeypatch.setattr(warmup, "_STARTED", [])
    warmup.start(Settings(demo=True, allowed_models=("scratch",)))
    thread = warmup.started()
    assert thread is not None
    thread.join(timeout=300)
    assert not registry.models
