"""Issue 20's limits: memory bounded at 8,192 tokens (measured in a fresh process), the
head-too-large error, Cancel between layers and between tiles, and SmolLM2 itself equal to its
eager attention at a modest length."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.long import Cancelled, attend_long, scratch_model

from .smollm2_model import smollm2
from .test_long import long_text

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def small() -> attnviz.ScratchModel:
    return scratch_model(1024, seed=2, n_layers=3, n_heads=4, d_model=64, d_ff=128)


def test_a_head_too_large_is_a_value_error_naming_its_size(small: attnviz.ScratchModel) -> None:
    long = attend_long(small, long_text(128), max_tokens=1024, head_limit_mb=1)
    assert long.n == 1024
    with pytest.raises(ValueError, match=r"at 1,024 tokens takes 0\.00419 GB, over the limit of 0\.00105 GB") as caught:
        long.head(0, 0)
    assert not isinstance(caught.value, MemoryError)
    assert long.rows(0, 0, [5]).shape == (1, 1024)  # rows still answer
    assert attend_long(small, long_text(128), max_tokens=1024, head_limit_mb=8).head(0, 0).shape == (1024, 1024)


def test_cancel_between_layers(small: attnviz.ScratchModel) -> None:
    stop = threading.Event()
    seen: list[int] = []

    def progress(done: int, total: int) -> None:
        seen.append(done)
        if done == 1:
            stop.set()

    with pytest.raises(Cancelled):
        attend_long(small, long_text(64), max_tokens=512, cancel=stop, progress=progress)
    assert max(seen) == 1 < small.n_layers  # stopped before the second layer ran


def test_cancel_between_tiles(small: attnviz.ScratchModel) -> None:
    long = attend_long(small, long_text(128), max_tokens=1024)
    long.tile_rows = 128
    asked = []

    def cancel() -> bool:
        asked.append(1)
        return len(asked) >= 3

    for reduce in (long.overview, long.received, long.distance):
        asked.clear()
        with pytest.raises(Cancelled):
            reduce(0, 0, cancel=cancel)
        assert len(asked) == 3  # asked before each tile, stopped at the third of eight


MEASURE = """
import json, resource, sys
import torch
from attnviz.long import attend_long, estimate, scratch_model
from attnviz.long.run import encode_long
torch.set_num_threads(2)
model = scratch_model(8192, seed=0, n_layers=2, n_heads=4, d_model=64, d_ff=128)
text = " ".join(f"Line {i}: the animal did not cross the street because it was tired." for i in range(800))
encode_long(model, text, 8192)
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
before = peak()
long = attend_long(model, text, max_tokens=8192)
long.overview(1, 3)
long.received(0, 2)
long.rows(1, 0, [0, 4096, 8191])
print(json.dumps({"n": long.n, "grew": peak() - before, "full": estimate(model, long.n).full_bytes,
                  "kept": long.kept_bytes}))
"""


@pytest.mark.slow
def test_memory_is_bounded_at_8192_tokens() -> None:
    """In a fresh process (its peak resident memory is its own): the forward, an overview, the
    received weights and rows at 8,192 tokens grow the peak by far less than one layer's maps."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE], capture_output=True, text=True, timeout=500, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["n"] == 8192
    assert got["full"] == 2 * 4 * 8192**2 * 4  # 2.1 GB of maps eager attention would return
    assert got["kept"] == 2 * 8 * 8192 * 16 * 4  # 8 MB of queries and keys
    assert got["grew"] < 400 * 2**20, f"peak grew by {got['grew'] / 2**20:.0f} MB"
    assert got["grew"] < got["full"] / 4


@pytest.mark.slow
def test_smollm2_equals_its_eager_attention() -> None:
    model = smollm2()
    text = long_text(40)
    eager = model.attend(text, max_tokens=384)
    long = attend_long(model, text, max_tokens=384)
    assert long.n == eager.n == 384 and long.causal
    assert long.kv_heads.tolist() == eager.kv_heads.tolist()  # type: ignore[union-attr]
    pick = [0, 1, 50, 200, 383]
    for layer in (0, 14, 29):
        for head in range(long.heads):
            np.testing.assert_allclose(long.rows(layer, head, pick), eager.weights[layer, head, pick], atol=1e-5)
    np.testing.assert_allclose(long.received(29, 8), eager.weights[29, 8].sum(0), atol=1e-4, rtol=1e-5)
