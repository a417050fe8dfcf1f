"""glibc keeps freed blocks under its self-raising mmap threshold in the heap, so large attention
arrays freed stay held (bench/results_browser.md, bench/results_long.md). A fixed 1 MB threshold,
as MALLOC_MMAP_THRESHOLD_=1048576 sets, gives them back at once. Process-wide, so called by app.py
and the `long` command, not on import; a no-op off glibc."""

from __future__ import annotations

import contextlib
import ctypes

__all__ = ["return_large_frees_to_the_os"]

M_MMAP_THRESHOLD = -3


def return_large_frees_to_the_os() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, 1 << 20)
