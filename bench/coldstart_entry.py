"""bench_coldstart.py's server entry: app.py as `streamlit run app.py` runs it, with the cold
server's first map (app/coldstart/first_map.py, MiniLM in numpy) switched off when
ATTNVIZ_BENCH_FIRST_MAP=0, so that the explorer's own map (torch) is the first chart. Both sides
of the comparison start through this file. No pages/ folder sits beside it: app.py registers its
pages by absolute path (tests/app_entry.py says why that matters)."""

import os
import runpy
import sys
import types
from pathlib import Path

NAME = "attnviz.app.coldstart.first_map"
if os.environ.get("ATTNVIZ_BENCH_FIRST_MAP") == "0" and NAME not in sys.modules:
    off = types.ModuleType(NAME)  # what warmup.loading and the warm-up thread call, doing nothing
    off.draw = lambda context, text: False  # type: ignore[attr-defined]
    off.clear = off.drop = lambda: None  # type: ignore[attr-defined]
    sys.modules[NAME] = off

runpy.run_path(str(Path(__file__).resolve().parents[1] / "app.py"), run_name="__main__")
