"""When more steps stop teaching: the held-out accuracy has plateaued.

A run with `TrainConfig(plateau=True)` (the Training lab's presets) ends at the first snapshot
where the best held-out accuracy of the last `window` steps is no more than MIN_GAIN above the
best before them, once it has reached FLOOR. Below the floor a flat stretch is not a plateau:
an induction model's accuracy sits flat for a while and then jumps when its two heads start to
work together (Olsson et al. 2022, the "phase change"), so a low flat curve keeps training.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

MIN_WINDOW = 100  # steps without a gain before a run counts as plateaued
MIN_GAIN = 0.005  # half a percentage point of held-out accuracy
FLOOR = 0.9  # below this a flat curve may still jump (the induction phase change)
SNAPSHOTS_IN_WINDOW = 4  # a window spans at least this many snapshots, whatever their spacing

# The Training lab's presets: the most steps a task trains for when it does not plateau first,
# kept under PRESET_SECONDS at STEP_S_LOADED, the slowest step time measured on a loaded 2-core
# machine (bench/results_training.md, bench/results_training_app.md).
PRESET_SECONDS = 60.0
STEP_S_LOADED = {"copy": 0.035, "reverse": 0.035, "induction": 0.065, "text": 0.09}
PRESET_STEPS = {"copy": 300, "reverse": 300, "induction": 800, "text": 600}
# The text task reads 32-character windows: a step about a third of 64's (bench/results_training.md).
PRESET_OPTIONS: dict[str, dict[str, object]] = {"text": {"block": 32}}


class Plateau(NamedTuple):
    step: int  # where the run stopped
    accuracy: float  # the best held-out accuracy of the last window
    window: int  # steps looked back
    gain: float  # how much the last window gained over the best before it (<= MIN_GAIN)


def plateau_window(every: int) -> int:
    """The window for snapshots `every` steps apart: MIN_WINDOW steps, and at least
    SNAPSHOTS_IN_WINDOW snapshots."""
    return max(MIN_WINDOW, SNAPSHOTS_IN_WINDOW * every)


def plateau_at(points: Sequence[tuple[int, float]], window: int = MIN_WINDOW) -> Plateau | None:
    """The plateau ending at the last of `points` ((step, held-out accuracy), in step order),
    or None while the accuracy still rises (or is below FLOOR)."""
    if not points:
        return None
    last = points[-1][0]
    before = [a for s, a in points if s <= last - window]
    recent = [a for s, a in points if s > last - window]
    if not before or not recent:
        return None
    best = max(recent)
    gain = best - max(before)
    if max(best, max(before)) < FLOOR or gain > MIN_GAIN:
        return None
    return Plateau(last, best, window, max(gain, 0.0))
