"""The server's start under `streamlit run app.py` (issue 24.2): app.py hands Streamlit an
`st.App` whose lifespan starts the warm-up, so torch and the embedded model load with the
server, before any visitor, and importing app.py as a module runs no page. The page run's own
order (title and box first, then the warm-up): tests/test_coldstart_order.py; the first chart's
time: bench/bench_browser.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from streamlit.web.server.app_discovery import discover_asgi_app

from .browser import ARTIFACTS, streamlit_server

ROOT = Path(__file__).resolve().parents[1]

# In a fresh interpreter: import app.py as `streamlit run` does (a module named "app"), then run
# the lifespan of its App as the server would, and wait for the warm-up thread.
PROBE = """
import asyncio, json, sys
import app
from streamlit.web.server.starlette.starlette_app import App
before = sorted(m for m in ("torch", "transformers") if m in sys.modules)
page_ran = [name for name in ("settings", "page", "context") if hasattr(app, name)]
from attnviz.app import warmup
from attnviz.app.registry import REGISTRY

async def serve():
    async with warmup.lifespan(app.app):
        warmup.started().join(timeout=300)

asyncio.run(serve())
print(json.dumps({"is_app": isinstance(app.app, App), "before": before, "page_ran": page_ran,
                  "loaded": [key[0] for key in REGISTRY.models], "torch": "torch" in sys.modules}))
"""


def test_streamlit_run_finds_the_app_in_app_py() -> None:
    found = discover_asgi_app(ROOT / "app.py")
    assert found.is_asgi_app and found.import_string == "app:app"


def test_the_servers_start_loads_the_model_and_importing_app_py_runs_no_page() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"is_app": True, "before": [], "page_ran": [], "loaded": ["minilm"], "torch": True}
    assert "missing ScriptRunContext" not in out.stderr  # no Streamlit call outside a page run


@pytest.mark.browser  # a real server (no browser opens: the point is that none has)
@pytest.mark.slow
def test_a_started_server_has_the_model_before_anyone_visits() -> None:
    with streamlit_server(args=["--server.fileWatcherType=none"]) as (url, proc):
        log = ARTIFACTS / f"streamlit-{url.rsplit(':', 1)[1]}.log"
        deadline = time.monotonic() + 180
        while "loaded model 'minilm'" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.2)
        text = log.read_text(errors="replace")
    assert "Traceback" not in text and re.search(r"URL: http://localhost:\d+", text), text[-3000:]
