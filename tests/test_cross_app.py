"""The cross-attention sections through AppTest (no browser): X asks Y in the lab with the Y = X
switch, the sentence-pair grid, and the encoder-decoder trained on the Training page."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from .test_app import APP, TIMEOUT, _app, _array, _chart, _lab, _messages, _ok

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_deployment")]


def _page(page: str, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    _ok(at.run())
    return _ok(at.switch_page(page).run())


def test_lab_cross_map_is_rectangular_and_y_equal_x_is_self_attention() -> None:
    at = _lab(_ok(_app()), "lab_cross_open")
    fig = _chart(at, "chart_cross_lab")
    z = _array(fig["data"][0]["z"])
    assert len(fig["data"][0]["y"]) == z.shape[0] and len(fig["data"][0]["x"]) == z.shape[1]
    assert z.shape[0] != z.shape[1]  # the lab sentence and the default Y differ in length
    np.testing.assert_allclose(z.sum(1), 1.0, atol=1e-4)
    assert _chart(at, "chart_cross_softmax")
    _ok(at.toggle(key="cross_same").set_value(True).run())
    assert any(s.startswith("With Y = X the cross-attention maps equal") for s in _messages(at, "success"))
    z = _array(_chart(at, "chart_cross_lab")["data"][0]["z"])
    assert z.shape[0] == z.shape[1]


def test_lab_pair_grid_finds_the_head_that_reads_across() -> None:
    at = _lab(_ok(_app()), "lab_pairs_open")
    grid = _array(_chart(at, "chart_pairs_grid")["data"][0]["z"])
    assert grid.shape == (6, 12) and ((grid >= 0) & (grid <= 1)).all()
    assert any(i.startswith("Reads across most") for i in _messages(at, "info"))
    _ok(at.selectbox(key="pairs_example").set_value("nli").run())
    assert at.text_area(key="pairs_a").value.startswith("A man is playing")


def test_training_page_trains_reverse_and_draws_the_anti_diagonal() -> None:
    at = _page("../pages/training.py", lang="zh")
    assert any("编码器-解码器" in h.value for h in at.subheader)
    at.number_input(key="s2s_steps").set_value(60)
    _ok(at.button(key="s2s_start").click().run())
    fig = _chart(at, "chart_s2s_cross")
    z = _array(fig["data"][0]["z"])
    assert z.shape == (8, 8)
    assert (z.argmax(1) == np.arange(8)[::-1]).all()  # the anti-diagonal
    assert _chart(at, "chart_s2s_curves")
    assert any("对齐分数" in s for s in _messages(at, "success"))
