"""How far a corpus run has got: `RunProgress`, and the `Meter` both engines count into."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RunProgress:
    """Where a run stands: records (lines or rows) accounted for, `resumed_records` of them by
    an earlier run; sentences analysed by this run; the fraction of the input done; sentences
    a second in this run and seconds left (None until there is a rate to go by)."""

    records: int
    analysed: int
    fraction: float
    rate: float
    eta_s: float | None
    resumed_records: int = 0
    finished: bool = False


class Meter:
    """Turns counts into RunProgress for the caller's callback (which may raise to stop the run)."""

    def __init__(self, callback: Callable[[RunProgress], None] | None):
        self.callback = callback
        self.start = time.monotonic()
        self.records = self.analysed = self.resumed = 0
        self.start_fraction = 0.0

    def report(self, fraction: float, extra_analysed: int = 0, finished: bool = False) -> None:
        if self.callback is None:
            return
        elapsed = max(time.monotonic() - self.start, 1e-9)
        fresh = self.analysed + extra_analysed
        rate = fresh / elapsed
        done = fraction - self.start_fraction
        eta = None if done <= 0 else elapsed * (1.0 - fraction) / done
        self.callback(
            RunProgress(self.records, fresh, fraction, rate, 0.0 if finished else eta, self.resumed, finished)
        )
