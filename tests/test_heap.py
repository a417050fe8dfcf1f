"""The server's long-lived heap out of every run's collection (attnviz/app/coldstart/heap.py): after the
warm-up's imports the collector walks a small part of what it walked before, and frozen objects
still die when their last reference goes. In a fresh interpreter each: a freeze is for the
process's life."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WARM_UP = """
import gc, json, weakref
from attnviz.app.coldstart import heap, warmup
class Box: pass
drop = Box()
drop.me = drop  # a cycle: only the collector frees it once frozen objects are out of its walk
gone = weakref.ref(drop)
del drop  # garbage now, but only a collection can tell
before = len(gc.get_objects())  # what a full collection walks: generations 0-2
warmup.warm_up()  # pandas, pyarrow, plotly: the figure imports, then heap.settle
walked, frozen = len(gc.get_objects()), gc.get_freeze_count()
plain = Box(); plain_ref = weakref.ref(plain); del plain  # made after: refcounting frees it at once
print(json.dumps({"settled": heap.settled(), "before": before, "walked": walked, "frozen": frozen,
                  "plain_freed": plain_ref() is None, "cycle_freed": gone() is None}))
"""


def _run(code: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_after_the_figure_imports_a_collection_walks_a_small_part_of_the_heap() -> None:
    got = _run(WARM_UP)
    assert got["settled"] == ["the figure imports"]
    walked, frozen, before = int(got["walked"]), int(got["frozen"]), int(got["before"])  # type: ignore[call-overload]
    assert frozen > before  # everything tracked at the freeze, the imports included
    assert walked < frozen / 20  # what each run's gc.collect(2) still walks
    assert got["plain_freed"] is True  # refcounting is untouched
    # the cycle made before the freeze was garbage at settle's own collection: freed, not frozen
    assert got["cycle_freed"] is True


def test_a_frozen_object_freed_by_refcount_and_a_later_cycle_by_the_collector() -> None:
    code = """
import gc, json, weakref
from attnviz.app.coldstart import heap
class Box: pass
early = Box(); early_ref = weakref.ref(early)
heap.settle("a test")
del early  # frozen, no cycle: its last reference goes, it goes
late = Box(); late.me = late; late_ref = weakref.ref(late); del late  # a cycle made after the freeze
gc.collect(2)
print(json.dumps({"settled": heap.settled(), "early_freed": early_ref() is None, "late_freed": late_ref() is None}))
"""
    got = _run(code)
    assert got == {"settled": ["a test"], "early_freed": True, "late_freed": True}
