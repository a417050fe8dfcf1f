"""How far back a sparse model can look, and how far each task needs to.

With a causal window of w, one layer lets a token read the w tokens before it; a second layer
reads tokens that already read w more, so L layers reach L * w back. A task whose answer sits
further back cannot be learned (its `reach`, tasks.py): induction copies r - 1 positions back
(r, the period), copy m, reverse between 1 and 2m - 1; the text task is mostly decided by the
few characters before.
Dilated, global and random patterns do not follow this arithmetic: `verdict` says "unknown".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .loop import TrainConfig
    from .tasks import Task


class Verdict(NamedTuple):
    kind: str  # "ok" | "partial" | "fail" | "unknown" ("" : full attention)
    reach: int  # tokens back the model can read, all layers together (0 when unknown)
    need: tuple[int, int]  # fewest and most tokens back the task's scored rows need


def verdict(cfg: TrainConfig, task: Task) -> Verdict:
    """Whether the pattern lets the task be learned at all: "ok" (every answer within reach),
    "partial" (only the nearer ones), "fail" (none), "unknown" (the other patterns)."""
    need = task.reach
    if not cfg.sparse:
        return Verdict("", 0, need)
    if cfg.sparse != "window":
        return Verdict("unknown", 0, need)
    r = cfg.layers * cfg.window  # L layers of a window w reach L * w back
    kind = "ok" if r >= need[1] else "partial" if r >= need[0] else "fail"
    return Verdict(kind, r, need)
