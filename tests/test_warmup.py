"""The cold server's warm-up (app/coldstart/warmup.py, issue 24): the background thread loads the first
model under the very registry key a new session's page asks for, so the page reuses it."""

from __future__ import annotations

import pytest

from attnviz.app.coldstart import warmup
from attnviz.app.server import registry as model_registry
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


def test_a_first_map_module_half_imported_by_another_session_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight first visits at once: one session's thread ran warm_up() while another was still
    importing app/coldstart/first_map.py, in sys.modules without `clear` yet, and that visit ended in an
    AttributeError ("partially initialized module"). The import here is held half-way in a
    thread of its own, as that session's was."""
    import importlib.abc
    import importlib.machinery
    import sys
    import threading
    import types

    name = "attnviz.app.coldstart.first_map"
    half, go_on = threading.Event(), threading.Event()

    class Slow(importlib.abc.Loader):
        def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
            return None

        def exec_module(self, module: types.ModuleType) -> None:
            half.set()  # in sys.modules now, nothing defined yet
            go_on.wait(60)
            module.clear = lambda: None  # type: ignore[attr-defined]

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(
            self, fullname: str, path: object, target: object = None
        ) -> importlib.machinery.ModuleSpec | None:
            return importlib.machinery.ModuleSpec(name, Slow()) if fullname == name else None

    import attnviz.app as package

    kept = sys.modules.pop(name, None), package.__dict__.pop("first_map", None)  # put back at the end
    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    importer = threading.Thread(target=importlib.import_module, args=(name,))
    importer.start()
    try:
        assert half.wait(60)
        assert name in sys.modules and not hasattr(sys.modules[name], "clear")
        warmup.warm_up()  # raised AttributeError here
    finally:
        go_on.set()
        importer.join(60)
        sys.modules.pop(name, None)  # the stand-in goes, the real module (if it was imported) comes back
        package.__dict__.pop("first_map", None)
        if kept[0] is not None:
            sys.modules[name], package.first_map = kept  # type: ignore[attr-defined]
