"""Two model loads at once in one process (the warm-up's MiniLM while a link's ?model=... loads
another): from_pretrained builds modules on the meta device by patching torch globally, so loads
overlapping in threads gave "Cannot copy out of meta tensor" in the app's server. load_model
takes them one at a time (models/loading.py `_LOAD_LOCK`); every weight of both is real."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import attnviz
from attnviz.models import loading

from .tiny_models import build


def test_loads_in_threads_at_once_all_get_real_weights(tmp_path: Path) -> None:
    folders = [build("bert", tmp_path / "bert"), build("gpt2", tmp_path / "gpt2")]
    names = ["minilm", "smollm2", *map(str, folders)]
    got: dict[str, Any] = {}
    start = threading.Barrier(len(names))

    def load(name: str) -> None:
        start.wait()
        try:
            got[name] = attnviz.load_model(name, device="cpu")
        except Exception as exc:  # reported below, with its name
            got[name] = exc

    threads = [threading.Thread(target=load, args=(n,)) for n in names]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert set(got) == set(names)
    for name, model in got.items():
        assert not isinstance(model, Exception), (name, model)
        module = getattr(model, "hf_model", None) or getattr(model, "encoder", None) or getattr(model, "model", None)
        tensors = list(module.parameters()) if module is not None else []
        assert all(not t.is_meta for t in tensors), name
        assert model.attend("dog bites man").weights.shape[0] == model.n_layers


def test_the_load_lock_is_reentrant() -> None:  # _load_hf takes it again inside load_model
    with loading._LOAD_LOCK, loading._LOAD_LOCK:
        pass
