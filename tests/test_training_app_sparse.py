"""The Training lab page says why a run ended on its plateau, and why a sparse model could not
learn its task (issues 23.7 and 22.3), through AppTest in both languages."""

from __future__ import annotations

import pytest

from attnviz import i18n

from .test_app import _messages, _ok
from .test_app_training import _deployment, _job, _train, _training_page, _wait  # noqa: F401 (autouse fixture)

pytestmark = pytest.mark.slow


def test_a_preset_run_stops_on_its_plateau_and_the_page_says_so() -> None:
    at = _train(_training_page(), "copy", 300)
    _wait(at)
    run = _job(at).run
    assert run is not None and run.plateau is not None and run.step < 300
    shown = _messages(at, "success")[0]
    want = i18n.t("trainlab.plateaued", "en", step=f"{run.step:,}", total="300", seconds="X", accuracy="Y",
                  window="W", gain="G").split("X")[0]  # fmt: skip
    assert shown.startswith(want.strip())
    assert "plateaued" in shown and f"{run.plateau.window:,}" in shown


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_induction_with_a_short_window_says_why_it_cannot_work(lang: str) -> None:
    at = _training_page(lang=lang)
    _ok(at.selectbox(key="train_sparse").set_value("window").run())
    _ok(at.number_input(key="train_window").set_value(2).run())
    at = _train(at, "induction", 20)
    _wait(at)
    run = _job(at).run
    assert run is not None and run.config.sparse == "window" and run.config.window == 2
    warning = _messages(at, "warning")
    assert len(warning) == 1
    # two layers of a window of 2 reach 4 tokens back; the periods 6-14 need 5-13
    assert "4" in warning[0] and "5–13" in warning[0]
    if lang == "en":
        assert "cannot be learned" in warning[0]
    else:
        assert "学不会" in warning[0]
