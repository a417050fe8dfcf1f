"""The lab's sparse attention section (issue 22.3) through AppTest: the four patterns on the
sentence's tokens, their growth against n^2, and the from-scratch model's maps under a pattern,
zero outside it and rows summing to 1."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.lab.sparse import KINDS, sparse_count, sparse_mask

from .test_app import _app, _array, _chart, _heatmap_z, _lab, _ok

pytestmark = pytest.mark.slow


def test_the_lab_draws_the_patterns_and_the_scratch_model_under_a_window() -> None:
    at = _ok(_app())
    at = _lab(at, "lab_sparse_open")
    patterns = _chart(at, "chart_sparse_patterns")
    assert len(patterns["data"]) == len(KINDS)
    n = int(_array(patterns["data"][0]["z"]).shape[0])
    np.testing.assert_array_equal(_array(patterns["data"][0]["z"]).astype(bool), sparse_mask(n, "window", window=2))
    growth = _chart(at, "chart_sparse_growth")
    sizes = [int(x) for x in _array(growth["data"][0]["x"])]
    assert [int(y) for y in _array(growth["data"][1]["y"])] == [sparse_count(m, "window", window=2) for m in sizes]
    _ok(at.selectbox(key="sparse_kind").set_value("window").run())
    z = _heatmap_z(at, "chart_sparse_map")
    allowed = sparse_mask(z.shape[0], "window", window=2)
    assert (z[~allowed] == 0).all()
    np.testing.assert_allclose(z.sum(-1), 1, atol=1e-5)
    assert not np.allclose(z, _heatmap_z(at, "chart_sparse_full"))  # the pattern moves the weights
