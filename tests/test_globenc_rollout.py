"""GlobEnc's rolled map as its authors compute it (mohsenfayyaz/GlobEnc src/attention_rollout.py,
`AttentionRollout.compute_joint_attention` on the raw N-Enc norms, rows normalised after the
product), and the per-layer-normalised order kept only as the option that says so."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz import explain
from attnviz.explain.context_mixing import normalise_rows, roll_out, roll_out_raw
from attnviz.explain.decompose import globenc_map, record_layers
from attnviz.models import PretrainedModel

from .conftest import SENTENCES


def authors_rollout(raw: np.ndarray) -> np.ndarray:
    """The authors' procedure, written out: joint[0] = M[0]; joint[i] = M[i].dot(joint[i-1]) on
    the raw maps (their compute_joint_attention, pre_process the identity), then each row / its sum."""
    joint = np.zeros(raw.shape)
    joint[0] = raw[0]
    for i in range(1, raw.shape[0]):
        joint[i] = raw[i].dot(joint[i - 1])
    return joint / joint.sum(-1, keepdims=True)


def test_the_raw_product_is_normalised_after_by_hand() -> None:
    """Two layers, two tokens: the row that carries larger norms weighs more in the product."""
    m0 = np.array([[3.0, 1.0], [1.0, 1.0]])  # row sums 4 and 2
    m1 = np.array([[1.0, 1.0], [1.0, 1.0]])
    rolled = roll_out_raw(np.stack([m0, m1]))
    # raw: m1 @ m0 = [[4, 2], [4, 2]] -> each row [2/3, 1/3]
    np.testing.assert_allclose(rolled[1], [[2 / 3, 1 / 3], [2 / 3, 1 / 3]], atol=1e-7)
    np.testing.assert_allclose(rolled[0], [[0.75, 0.25], [0.5, 0.5]], atol=1e-7)
    # normalised first: [[.5, .5], [.5, .5]] @ [[.75, .25], [.5, .5]] = [[.625, .375], ...]
    other = roll_out(normalise_rows(np.stack([m0, m1])), residual=False)
    np.testing.assert_allclose(other[1], [[0.625, 0.375], [0.625, 0.375]], atol=1e-7)


def test_the_raw_rollout_is_the_authors_procedure_on_random_norms() -> None:
    rng = np.random.default_rng(0)
    raw = rng.random((6, 7, 7)) * rng.uniform(0.1, 30.0, size=(6, 7, 1))  # rows of very different sizes
    np.testing.assert_allclose(roll_out_raw(raw), authors_rollout(raw), rtol=1e-5, atol=1e-7)


def test_a_deep_stack_of_large_norms_stays_finite() -> None:
    raw = np.full((200, 3, 3), 50.0)  # 150^200 overflows float64 without the rescaling
    rolled = roll_out_raw(raw)
    assert np.isfinite(rolled).all()
    np.testing.assert_allclose(rolled[-1], 1 / 3, atol=1e-6)


@pytest.fixture(scope="module")
def raw_norms(minilm: PretrainedModel) -> np.ndarray:
    """The raw GlobEnc norms of every layer of the embedded model, straight from `globenc_map`."""
    enc = minilm.encode(SENTENCES[0])
    with torch.inference_mode():
        return np.stack([globenc_map(r).double().numpy() for r in record_layers(minilm, enc)])


def test_contributions_roll_globenc_out_as_the_authors_do(minilm: PretrainedModel, raw_norms: np.ndarray) -> None:
    c = explain.contributions(minilm, SENTENCES[0], "globenc")
    np.testing.assert_allclose(c.per_layer, raw_norms / raw_norms.sum(-1, keepdims=True), atol=1e-6)
    np.testing.assert_allclose(c.rolled_layers, authors_rollout(raw_norms), atol=1e-5)
    assert c.rolled_layers[0] == pytest.approx(c.per_layer[0], abs=1e-6)  # one layer: the orders agree


def test_the_per_layer_normalised_order_is_an_option_and_differs(
    minilm: PretrainedModel, raw_norms: np.ndarray
) -> None:
    c = explain.contributions(minilm, SENTENCES[0], "globenc", globenc_rollout="normalised_layers")
    per_layer = raw_norms / raw_norms.sum(-1, keepdims=True)
    np.testing.assert_allclose(c.rolled_layers, roll_out(per_layer, residual=False), atol=1e-5)
    default = explain.contributions(minilm, SENTENCES[0], "globenc")
    assert np.abs(c.rolled - default.rolled).max() > 1e-3  # the two orders are not the same map
    with pytest.raises(ValueError, match="normalised_layers"):
        explain.contributions(minilm, SENTENCES[0], "globenc", globenc_rollout="sideways")
