"""glibc keeps freed blocks under its (self-raising) mmap threshold in the heap: after a few
75 MB attention arrays a server held 100-150 MB it no longer used and crossed 1 GB
(bench/results_browser.md), and the long mode at 8,192 tokens peaked at 2.38 GB instead of 1.76
GB (bench/results_long.md). A fixed 1 MB threshold, as MALLOC_MMAP_THRESHOLD_=1048576 would set,
gives large blocks back at once. Called by app.py and the `long` command, not on import: it is
process-wide. Only on glibc; elsewhere nothing happens."""

from __future__ import annotations

import contextlib
import ctypes

__all__ = ["return_large_frees_to_the_os"]

M_MMAP_THRESHOLD = -3


def return_large_frees_to_the_os() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, 1 << 20)
