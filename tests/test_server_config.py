"""The project's Streamlit settings are read by Streamlit as written (.streamlit/config.toml): a
misspelt section or option would be ignored without a word, and the server would go back to
Streamlit's default. Read in a fresh interpreter in the project's folder, as `streamlit run` does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READ = (
    "import json; from streamlit import config; config.get_config_options(force_reparse=True);"
    "print(json.dumps({k: config.get_option(k) for k in %r}))"
)


def test_the_server_runs_no_full_collection_after_each_run_and_watches_no_files() -> None:
    """Each run's gc.collect(2) walks every object the sessions made: at 120 sessions it held the
    GIL for most of the server's time (bench/results_hall.md)."""
    keys = ["runner.postScriptGC", "server.fileWatcherType", "client.showErrorDetails"]
    out = subprocess.run([sys.executable, "-c", READ % keys], cwd=ROOT, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"runner.postScriptGC": False, "server.fileWatcherType": "none", "client.showErrorDetails": "none"}
