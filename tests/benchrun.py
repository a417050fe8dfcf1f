"""A benchmark script run as `python bench/NAME.py ARGS` runs it, but in the test's own process:
as `__main__`, with that argv, bench/ first on sys.path and the repository as the working
directory, its standard output captured. A new interpreter for each smoke test paid torch's
import and a model load (3-6 s on 2 cores) for a run of a few seconds; the script's code, its
`__main__` block and its exit status are the same here. What it changes in the process is put
back: argv, sys.path, the working directory and torch's thread count (`--threads 1`).

Streams and exit status only: a benchmark that starts processes of its own (bench_corpus.py's
memory children) still does, and `python bench/NAME.py` from a shell is what the README and the
results files show."""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_bench(script: str, *args: str) -> str:
    """Run bench/SCRIPT with ARGS; its standard output. A non-zero exit fails the test."""
    import torch

    path = ROOT / "bench" / script
    saved_argv, saved_path, saved_cwd, threads = sys.argv, sys.path[:], os.getcwd(), torch.get_num_threads()
    out = io.StringIO()
    sys.argv = [f"bench/{script}", *args]
    sys.path.insert(0, str(path.parent))
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out):
            try:
                runpy.run_path(str(path), run_name="__main__")
            except SystemExit as stop:
                assert stop.code in (None, 0), f"bench/{script} exited with {stop.code}:\n{out.getvalue()[-2000:]}"
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.chdir(saved_cwd)
        torch.set_num_threads(threads)
    return out.getvalue()
