"""The digits section of the Training lab through AppTest (no browser): train a short run, see the
image with each head's class-token map and the rollout, pick a misclassified digit, step snapshots."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from .test_app import APP, TIMEOUT, _array, _chart, _ok

pytestmark = pytest.mark.slow


def _training(lang: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(lang=lang)
    _ok(at.run())
    return _ok(at.switch_page("../pages/training.py").run())


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_training_page_trains_digits_and_draws_patch_maps(lang: str) -> None:
    at = _training(lang)
    title = "Attention over image patches" if lang == "en" else "图像块上的注意力"
    assert any(title in h.value for h in at.subheader)
    at.number_input(key="digits_steps").set_value(60)
    _ok(at.button(key="digits_start").click().run())
    fig = _chart(at, "chart_digits_maps")
    panels = [_array(trace["z"]) for trace in fig["data"]]
    assert len(panels) == 1 + 4 + 1  # the image, four heads, the rollout
    assert all(p.shape == (8, 8) for p in panels)
    assert panels[0].min() >= 0 and panels[0].max() <= 16
    for head in panels[1:5]:  # each 2 x 2 block is one patch; the 16 patches share what [CLS] gives away
        assert np.allclose(head[::2, ::2], head[1::2, 1::2]) and head[::2, ::2].sum() <= 1 + 1e-5
    picks = at.selectbox(key="digits_pick").options
    wrong = [i for i, o in enumerate(picks) if "✗" in o]
    assert wrong  # a 60-step run leaves digits misclassified: they are offered, and marked
    _ok(at.selectbox(key="digits_pick").select_index(wrong[0]).run())
    assert " 60 " in _chart(at, "chart_digits_maps")["layout"]["title"]["text"]  # the last snapshot first
    _ok(at.select_slider(key="digits_snapshot").set_value(0).run())
    assert " 6 " in _chart(at, "chart_digits_maps")["layout"]["title"]["text"]  # 60 steps, 10 snapshots
    assert not at.exception
