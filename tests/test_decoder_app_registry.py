"""The demo's model list offers SmolLM2 (loaded only when chosen), and the model registry drops
the least recently used model once the loaded weights pass the memory setting."""

from __future__ import annotations

import torch

from attnviz.app.server import registry
from attnviz.config import settings_from_env


class FakeRunner:
    """A runner holding `mb` megabytes of weights (the registry measures its torch modules)."""

    def __init__(self, mb: int) -> None:
        self.hf_model = torch.nn.Linear(mb * 2**18, 1, bias=False)  # mb MiB of float32
        self.name = f"{mb} MB"


def test_a_model_past_the_memory_setting_drops_the_least_recently_used_and_it_reloads() -> None:
    reg = registry._Registry()
    built: list[str] = []

    def loader(name: str, mb: int):  # type: ignore[no-untyped-def]
        def load() -> FakeRunner:
            built.append(name)
            return FakeRunner(mb)

        return load

    limit = 10 * 2**20
    a = reg.get(("a",), loader("a", 4), limit)  # type: ignore[arg-type]
    assert registry.model_bytes(a) == 4 * 2**20
    reg.get(("b",), loader("b", 4), limit)  # type: ignore[arg-type]
    assert list(reg.models) == [("a",), ("b",)]  # 8 MB: both kept
    assert reg.get(("a",), loader("a", 4), limit) is a  # a is now the most recently used
    reg.get(("c",), loader("c", 4), limit)  # type: ignore[arg-type]  # 12 MB > 10: b, the oldest, goes
    assert list(reg.models) == [("a",), ("c",)] and built == ["a", "b", "c"]
    assert set(reg.sizes) == {("a",), ("c",)}
    b = reg.get(("b",), loader("b", 4), limit)  # type: ignore[arg-type]  # the dropped one loads again
    assert built == ["a", "b", "c", "b"] and reg.loads == 4 and isinstance(b, FakeRunner)
    assert list(reg.models) == [("c",), ("b",)]  # and a, now the oldest, made room for it


def test_a_model_larger_than_the_setting_is_still_kept_and_no_setting_keeps_all() -> None:
    reg = registry._Registry()
    reg.get(("small",), lambda: FakeRunner(1), 2 * 2**20)  # type: ignore[arg-type, return-value]
    reg.get(("big",), lambda: FakeRunner(3), 2 * 2**20)  # type: ignore[arg-type, return-value]
    assert list(reg.models) == [("big",)]  # the one just loaded is the one asked for
    free = registry._Registry()
    for name in "abc":
        free.get((name,), lambda: FakeRunner(2))  # type: ignore[arg-type, return-value]
    assert len(free.models) == 3


def test_tied_weights_count_once() -> None:
    runner = FakeRunner(1)
    runner.lm_head = runner.hf_model  # type: ignore[attr-defined]  # the unembedding is the embedding
    assert registry.model_bytes(runner) == 2**20


def test_smollm2_is_offered_in_the_demo_and_the_memory_setting_is_read() -> None:
    demo = settings_from_env({"ATTNVIZ_DEMO": "1"})
    assert "smollm2" in demo.model_choices and demo.models_mb == 1024
    assert settings_from_env({}).models_mb == 0
    assert settings_from_env({"ATTNVIZ_MODELS_MB": "700"}).models_mb == 700
