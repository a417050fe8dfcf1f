"""Issue 20: `attend_long` equals eager attention wherever eager fits, for rows, tiles, whole
heads, overviews, received weights and the distance profile: MiniLM at 512 tokens, a tiny
Llama with grouped heads and rotary positions and the scratch encoder at 1,024 tokens."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.long import LongAttention, attend_long, block_edges, estimate, scratch_model

from . import tiny_llama
from .conftest import SENTENCES

ATOL = 1e-5


def long_text(n_sentences: int) -> str:
    return " ".join(f"Line {i}: {SENTENCES[i % len(SENTENCES)]}" for i in range(n_sentences))


def build_llama(folder: Path, positions: int = 1024) -> Path:
    """A tiny Llama (2 layers, 4 query heads sharing 2 key/value heads, rotary) for `positions` tokens."""
    return tiny_llama.build_llama(folder, positions=positions, init=0.02)


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> attnviz.PretrainedModel:
    model = attnviz.load_model(str(build_llama(tmp_path_factory.mktemp("tiny-llama-long"))), "cpu", max_tokens=1024)
    assert isinstance(model, attnviz.PretrainedModel)
    return model


@pytest.fixture(scope="module")
def small_scratch() -> attnviz.ScratchModel:
    return scratch_model(1024, seed=1, n_layers=2, n_heads=4, d_model=64, d_ff=128)


def pair(model: attnviz.PretrainedModel | attnviz.ScratchModel, n: int) -> tuple[LongAttention, np.ndarray]:
    text = long_text(n // 8)
    eager = model.attend(text, max_tokens=n)
    long = attend_long(model, text, max_tokens=n)
    assert long.n == eager.n == n, "the text must fill the length under test"
    assert long.tokens == eager.tokens
    return long, eager.weights


@pytest.fixture(scope="module")
def cases(
    minilm: attnviz.PretrainedModel, llama: attnviz.PretrainedModel, small_scratch: attnviz.ScratchModel
) -> dict[str, tuple[LongAttention, np.ndarray]]:
    return {"minilm": pair(minilm, 512), "llama": pair(llama, 1024), "scratch": pair(small_scratch, 1024)}


NAMES = ["minilm", "llama", "scratch"]


def heads_of(long: LongAttention) -> list[tuple[int, int]]:
    return [(layer, head) for layer in range(long.layers) for head in range(long.heads)]


def test_shape_and_kinds(cases: dict[str, tuple[LongAttention, np.ndarray]]) -> None:
    long, _ = cases["llama"]
    assert (long.layers, long.heads, long.causal) == (2, 4, True)
    assert long.kv_heads.tolist() == [0, 0, 1, 1]
    assert long.keys[0].shape[0] == 2  # grouped keys are kept once, expanded when read
    assert not cases["minilm"][0].causal and cases["minilm"][0].layers == 6


@pytest.mark.parametrize("name", NAMES)
def test_rows_and_heads_equal_eager(cases: dict[str, tuple[LongAttention, np.ndarray]], name: str) -> None:
    long, eager = cases[name]
    pick = np.random.default_rng(0).choice(long.n, size=40, replace=False)
    for layer, head in heads_of(long):
        np.testing.assert_allclose(long.rows(layer, head, pick), eager[layer, head, pick], atol=ATOL, rtol=0)
    np.testing.assert_allclose(long.head(1, 2), eager[1, 2], atol=ATOL, rtol=0)
    assert long.rows(0, 0, 7).shape == (1, long.n)
    np.testing.assert_allclose(long.rows(0, 0, [-1]), eager[0, 0, [-1]], atol=ATOL, rtol=0)


@pytest.mark.parametrize("name", NAMES)
def test_tiles_equal_eager(cases: dict[str, tuple[LongAttention, np.ndarray]], name: str) -> None:
    long, eager = cases[name]
    for rows, cols in [(slice(0, 64), slice(0, 64)), (slice(300, 357), slice(10, 500)), (slice(448, 512), slice(None))]:
        np.testing.assert_allclose(long.tile(1, 1, rows, cols), eager[1, 1, rows, cols], atol=ATOL, rtol=0)


def block_means(m: np.ndarray, size: int) -> np.ndarray:
    edges = block_edges(m.shape[-1], size)
    blocks = list(itertools.pairwise(edges))
    return np.array([[m[a:b, c:d].mean() for c, d in blocks] for a, b in blocks])


@pytest.mark.parametrize("name", NAMES)
def test_overview_received_and_distance_equal_eager(
    cases: dict[str, tuple[LongAttention, np.ndarray]], name: str
) -> None:
    long, eager = cases[name]
    long.tile_rows = 96  # tiles that do not line up with the blocks
    try:
        for layer, head in [(0, 0), (long.layers - 1, long.heads - 1)]:
            full = eager[layer, head].astype(np.float64)
            for size in (256, 100, 7):
                np.testing.assert_allclose(long.overview(layer, head, size), block_means(full, size), atol=1e-6)
            np.testing.assert_allclose(long.received(layer, head), full.sum(0), atol=1e-4, rtol=1e-5)
            both = long.summary(layer, head, 100)
            np.testing.assert_array_equal(both[0], long.overview(layer, head, 100))
            np.testing.assert_array_equal(both[1], long.received(layer, head))
            gaps = np.abs(np.arange(long.n)[:, None] - np.arange(long.n)[None, :])
            allowed = gaps >= 0 if not long.causal else np.tril(np.ones_like(gaps, dtype=bool))
            expect = [full[(gaps == d) & allowed].mean() for d in (0, 1, 5, 200, long.n - 1)]
            got = long.distance(layer, head)[[0, 1, 5, 200, long.n - 1]]
            np.testing.assert_allclose(got, expect, atol=1e-6)
    finally:
        long.tile_rows = 512


def test_rows_sum_to_one_and_see_no_future(cases: dict[str, tuple[LongAttention, np.ndarray]]) -> None:
    long, _ = cases["llama"]
    rows = long.rows(1, 3, range(0, long.n, 37))
    np.testing.assert_allclose(rows.sum(1), 1, atol=1e-5)
    for r, i in zip(rows, range(0, long.n, 37), strict=True):
        assert not r[i + 1 :].any()
    assert long.overview(1, 3, 16)[0, 1:].max() == 0  # the first block row sees no later block


def test_the_estimate_counts_full_maps_against_kept_queries_and_keys(
    cases: dict[str, tuple[LongAttention, np.ndarray]], llama: attnviz.PretrainedModel
) -> None:
    long, eager = cases["llama"]
    est = estimate(llama, long.n)
    assert est.full_bytes == eager.nbytes == long.full_bytes
    assert est.kept_bytes == long.kept_bytes
    assert est.head_bytes == long.n**2 * 4
