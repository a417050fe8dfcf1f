"""A short input's forward runs on one CPU thread (attnviz/models/threads.py: two OpenMP threads
wait on each other at every op, which on a busy 2-core machine made a 15-token pass 35 times
slower); a long one keeps torch's count, and the count is restored after the pass."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch

import attnviz
from attnviz.models.threads import SMALL_INPUT_TOKENS, cpu_threads_for, torch_threads


@pytest.fixture
def two_threads() -> Iterator[None]:
    with torch_threads(2):
        yield


def test_a_short_input_runs_on_one_thread_and_a_long_one_on_two(
    minilm: attnviz.PretrainedModel, monkeypatch: pytest.MonkeyPatch, two_threads: None
) -> None:
    seen: list[int] = []
    real = type(minilm).attention_array

    def spy(self: Any, inputs: Any) -> np.ndarray:
        seen.append(torch.get_num_threads())
        return real(self, inputs)

    monkeypatch.setattr(type(minilm), "attention_array", spy)
    short = minilm.attend("dog bites man")
    long = minilm.attend(" ".join(["word"] * (SMALL_INPUT_TOKENS + 10)))
    assert short.n <= SMALL_INPUT_TOKENS < long.n
    assert seen == [1, 2] and torch.get_num_threads() == 2  # and as it was after each pass


def test_the_count_is_restored_when_the_pass_fails_and_left_alone_off_the_cpu(two_threads: None) -> None:
    with pytest.raises(RuntimeError), cpu_threads_for(5, torch.device("cpu")):
        assert torch.get_num_threads() == 1
        raise RuntimeError("the pass failed")
    assert torch.get_num_threads() == 2
    with cpu_threads_for(5, torch.device("meta")):
        assert torch.get_num_threads() == 2  # an accelerator's pass: the CPU's threads are not its business
