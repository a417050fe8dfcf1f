"""The Training lab's presets end when the held-out accuracy has plateaued and say so (issue
23.7): the rule on plain numbers, a seeded run that stops early and why, the page's message,
and each preset's step budget."""

from __future__ import annotations

import pytest

from attnviz import i18n
from attnviz.app.sections import training as section
from attnviz.training import TrainConfig, train
from attnviz.training.plateau import (
    FLOOR,
    MIN_GAIN,
    MIN_WINDOW,
    PRESET_OPTIONS,
    PRESET_SECONDS,
    PRESET_STEPS,
    STEP_S_LOADED,
    Plateau,
    plateau_at,
    plateau_window,
)
from attnviz.training.tasks import TASKS


def test_a_rising_curve_is_no_plateau_and_a_flat_high_one_is() -> None:
    rising = [(s, min(1.0, s / 400)) for s in range(0, 401, 25)]
    assert plateau_at(rising) is None
    flat = [*rising, *((s, 1.0) for s in range(425, 501, 25))]
    got = plateau_at(flat)
    assert got == Plateau(500, 1.0, MIN_WINDOW, 0.0)


def test_a_flat_low_curve_keeps_training_for_the_phase_change() -> None:
    """Below the floor a flat stretch is where an induction model waits before its jump."""
    low = [(s, 0.3) for s in range(0, 1001, 25)]
    assert plateau_at(low) is None
    assert plateau_at([(s, FLOOR) for s in range(0, 201, 25)]) is not None


def test_a_gain_just_above_the_threshold_is_not_a_plateau() -> None:
    points = [(0, 0.95), (100, 0.95), (150, 0.95 + 2 * MIN_GAIN)]
    assert plateau_at(points) is None
    assert plateau_at([(0, 0.95), (100, 0.95), (150, 0.95 + MIN_GAIN / 2)]) is not None
    assert plateau_at([]) is None and plateau_at([(0, 1.0)]) is None


def test_the_window_spans_at_least_four_snapshots() -> None:
    assert plateau_window(5) == MIN_WINDOW
    assert plateau_window(50) == 200


def test_a_seeded_short_run_stops_on_its_plateau_and_says_why() -> None:
    run = train("copy", 300, seed=0, plateau=True)
    assert run.plateau is not None and not run.stopped
    assert run.step == run.plateau.step < 300  # stopped early, at a snapshot
    assert run.snapshots[-1].step == run.step
    assert run.plateau.accuracy >= FLOOR and 0 <= run.plateau.gain <= MIN_GAIN
    window = [s.accuracy for s in run.snapshots if s.step > run.step - run.plateau.window]
    before = [s.accuracy for s in run.snapshots if s.step <= run.step - run.plateau.window]
    assert max(window) - max(before) <= MIN_GAIN  # what the rule says, on the run's own numbers
    assert run.summary()["plateau"] == run.plateau._asdict()
    message = i18n.t("trainlab.plateaued", "en", step=f"{run.step:,}", total="300", seconds="1.0",
                     accuracy=f"{run.plateau.accuracy:.1%}", window=str(run.plateau.window), gain="0.0")  # fmt: skip
    assert "plateaued" in message and str(run.step) in message


def test_the_same_run_without_the_rule_trains_every_step() -> None:
    run = train("copy", 160, seed=0)
    assert run.plateau is None and run.step == 160


def test_plateau_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="plateau"):
        TrainConfig(plateau="yes").check()  # type: ignore[arg-type]


@pytest.mark.parametrize("task", TASKS)
def test_each_preset_fits_its_minute_at_the_loaded_machine_s_speed(task: str) -> None:
    """The step budget times the slowest step measured on the shared 2-core machine at load 9-11
    (attnviz/training/plateau.py) stays under a minute; the page offers these budgets."""
    assert PRESET_STEPS[task] * STEP_S_LOADED[task] <= PRESET_SECONDS
    assert section.DEFAULT_STEPS[task] == PRESET_STEPS[task]
    TrainConfig(task, PRESET_STEPS[task], plateau=True, **PRESET_OPTIONS.get(task, {})).check()  # type: ignore[arg-type]


def test_the_induction_preset_plateaus_well_before_its_budget() -> None:
    """Seed 0: 100 % held-out by step ~200 (bench/results_training.md), stopped by step 400."""
    run = train("induction", PRESET_STEPS["induction"], seed=0, plateau=True)
    assert run.plateau is not None and run.step <= PRESET_STEPS["induction"] // 2
    assert run.snapshots[-1].accuracy >= 0.99
