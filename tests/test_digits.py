"""The digits ViT (attnviz/training/digits.py): the bundled data, the held-out target on a seeded
short run, snapshot maps over the class token and the 16 patches, determinism for a seed."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnviz.training
from attnviz.training.digits import digit_tokens, held_out_split, load_digits, patches


@pytest.fixture(scope="module")
def run() -> attnviz.training.DigitsRun:
    return attnviz.training.train(task="digits", steps=150, seed=0, snapshots=5)


def test_bundled_data_reads_as_1797_images_of_64_pixels() -> None:
    images, labels = load_digits()
    assert images.shape == (1797, 64) and labels.shape == (1797,)
    assert images.min() == 0 and images.max() == 16 and np.all(images == np.round(images))
    assert set(labels.tolist()) == set(range(10))


def test_split_is_fixed_and_disjoint() -> None:
    train, held = held_out_split()
    assert len(held) == 359 and len(train) + len(held) == 1797
    assert not set(train.tolist()) & set(held.tolist())
    assert np.array_equal(held, held_out_split()[1])


def test_patches_are_row_major_2x2_blocks() -> None:
    image = torch.arange(64, dtype=torch.float32)[None] * 16  # pixel value = 16 * its index
    p = patches(image)
    assert p.shape == (1, 16, 4)
    assert p[0, 0].tolist() == [0, 1, 8, 9]  # top-left patch
    assert p[0, 1].tolist() == [2, 3, 10, 11]
    assert p[0, 15].tolist() == [54, 55, 62, 63]  # bottom-right


def test_seeded_short_run_reaches_90_percent_held_out(run: attnviz.training.DigitsRun) -> None:
    assert run.accuracy >= 0.90
    assert run.snapshots[-1].step == 150 and len(run.snapshots) == 5
    wrong = run.misclassified
    assert np.all(run.predictions[wrong] != run.labels[wrong])
    assert np.isclose(1 - len(wrong) / len(run.labels), run.accuracy)


def test_snapshot_rows_sum_to_one_over_class_token_and_patches(run: attnviz.training.DigitsRun) -> None:
    for snap in run.snapshots:
        att = snap.attention
        assert att.tokens == digit_tokens() and len(att.tokens) == 17
        assert att.weights.shape == (2, 4, 17, 17)
        np.testing.assert_allclose(att.weights.sum(-1), 1.0, atol=1e-5)
        assert att.special[0] and not att.special[1:].any()
    # any held-out digit through any snapshot's weights; the last equals the final snapshot's probe map
    np.testing.assert_allclose(run.attention(run.probe).weights, run.snapshots[-1].attention.weights, atol=1e-6)
    np.testing.assert_allclose(run.attention(5, snapshot=0).weights.sum(-1), 1.0, atol=1e-5)


def test_deterministic_for_a_seed() -> None:
    a = attnviz.training.train(task="digits", steps=12, seed=3, snapshots=2)
    b = attnviz.training.train(task="digits", steps=12, seed=3, snapshots=2)
    c = attnviz.training.train(task="digits", steps=12, seed=4, snapshots=2)
    assert [s.accuracy for s in a.snapshots] == [s.accuracy for s in b.snapshots]
    np.testing.assert_array_equal(a.snapshots[-1].attention.weights, b.snapshots[-1].attention.weights)
    assert not np.array_equal(a.snapshots[-1].attention.weights, c.snapshots[-1].attention.weights)


def test_limits_are_named() -> None:
    with pytest.raises(ValueError, match="steps must be between"):
        attnviz.training.train(task="digits", steps=0)
    with pytest.raises(ValueError, match="probe"):
        attnviz.training.train(task="digits", steps=1, probe=10_000)
