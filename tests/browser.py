"""Real-browser helpers: Debian's chromium driven by Playwright, and `streamlit run app.py` on
a free loopback port, as Streamlit's own end-to-end tests do (start headless, wait for
/_stcore/health). Playwright's bundled browser download does not work on our machines, so
Chromium comes from the system (`apt-get install chromium chromium-headless-shell`).

The tests drive Chromium's old headless shell (Debian's `chromium-headless-shell`: the same
Blink, V8 and Skia as `chromium`, without the browser's windowing and UI layers; what Playwright
itself runs for headless) when it is installed, else `chromium`: a first visit costs the machine
2.2-2.4 CPU-s with the shell against 3.5-3.8 with the full browser (explorer, caveats; lab 7.1
against 8.4), about a third of the browser tests' CPU. The benchmarks and scripts that measure
what a person waits for (bench/bench_browser.py, bench_pageload.py, bench_training_app.py,
scripts/loadtest.py, scripts/attacks.py) drive the full browser. ATTNVIZ_CHROMIUM names the
executable to use instead (`chromium` for the full browser anywhere).

Outside CI a missing chromium skips the browser tests; in CI (CI=true) it fails them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # Text measured as a desktop browser measures it: the headless shell hints glyph advances to
    # whole pixels by default, which made Plotly titles on a 390 px phone 10 % wider than in
    # chromium and in people's browsers (a title wrapped to fit ran 3 px past its figure).
    "--font-render-hinting=none",
]
# The tests' shared Chromium only (SharedBrowser): the tabs of one browser context share one
# renderer process, kept alive between tests by a page of its own (keep_renderer). Chromium
# otherwise starts a renderer for every new tab, which builds Blink and V8 again and compiles
# Streamlit's and Plotly's scripts again (V8 keeps what it compiled per process). Four browser
# modules, one after another: 165 and 177 machine CPU-s before, 140 and 143 after, 19 renderers
# -> 6; a whole run's renderers 82 -> 35-36 (bench/README.md: issue 24, fourteenth pass). Desktop Chrome shares a site's renderer
# between tabs the same way once it has many; each tab keeps its own document and scripts, and
# another context never shares a renderer with this one.
TEST_ARGS = [*CHROMIUM_ARGS, "--renderer-process-limit=1"]


SHELL = "chromium-headless-shell"
FULL = "chromium"


def chromium_path() -> str:
    """The executable the browser tests launch: ATTNVIZ_CHROMIUM if set, else the headless shell
    if installed, else chromium (see the module's docstring)."""
    chosen = os.environ.get("ATTNVIZ_CHROMIUM")
    if chosen:
        path = shutil.which(chosen)
        if path is None:
            pytest.fail(f"ATTNVIZ_CHROMIUM={chosen!r} is not an executable on PATH")
        return path
    path = shutil.which(SHELL) or shutil.which(FULL) or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (apt-get install chromium); CI must run the browser tests")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return path


@contextlib.contextmanager
def browser() -> Iterator[Any]:
    """A headless Chromium (Playwright Browser)."""
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    interval_polling()
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


POLL_MS = 16  # how often a wait_for_function without its own `polling` checks: about a frame


def interval_polling() -> None:
    """Playwright's wait_for_function checks its predicate on every animation frame unless told
    otherwise, and asking for frames makes headless Chromium draw them: 0.1-0.3 of a core per
    waiting page, measured on a still page, while the browser tests spend most of their time
    waiting for a server. Checked every POLL_MS instead (a timer, no frames): the same
    granularity for about a tenth of the CPU. A wait that passes its own `polling` keeps it."""
    from playwright.sync_api import Frame, Page

    for cls in (Page, Frame):
        original = cls.wait_for_function
        if getattr(original, "interval_polling", False):
            continue

        def wait_for_function(
            self: Any,
            expression: str,
            *,
            arg: Any = None,
            timeout: float | None = None,
            polling: Any = None,
            _original: Any = original,
        ) -> Any:
            return _original(
                self, expression, arg=arg, timeout=timeout, polling=POLL_MS if polling is None else polling
            )

        wait_for_function.interval_polling = True  # type: ignore[attr-defined]
        cls.wait_for_function = wait_for_function  # type: ignore[assignment,method-assign]


class SharedBrowser:
    """One headless Chromium for a run of browser test modules in one test process (a launch
    with its Playwright driver costs 2-5 s on 2 cores: once per module, 26 modules, it was a
    minute or two of a run). Each test still gets its own browser context (cookies, storage,
    cache: a context is a fresh profile), and a module's contexts left open are closed when it
    ends (tests/conftest.py: chromium). Started on first use, and started again if it died.

    Sync Playwright keeps its event loop marked running in the thread that started it, so
    `asyncio.run` cannot be called there while it lives (tests/test_load.py drives its sessions
    with async Playwright): tests/conftest.py closes it before such a module (`ASYNC_PLAYWRIGHT`),
    and the next browser module starts another."""

    def __init__(self) -> None:
        self._playwright: Any = None
        self._browser: Any = None

    def get(self) -> Any:
        if self._browser is None or not self._browser.is_connected():
            self.close()
            exe = chromium_path()
            from playwright.sync_api import sync_playwright

            interval_polling()
            self._playwright = sync_playwright().start()
            self._browser = self._playwright.chromium.launch(executable_path=exe, headless=True, args=TEST_ARGS)
        return self._browser

    @property
    def running(self) -> bool:
        return self._playwright is not None

    def close(self) -> None:
        browser, playwright = self._browser, self._playwright
        self._browser = self._playwright = None
        try:
            if browser is not None and browser.is_connected():
                browser.close()
        finally:
            if playwright is not None:
                playwright.stop()


# Browser contexts kept from test to test, one per set of options (tests/test_browser.py:
# _session). Each test still gets a new tab, so a new Streamlit session, with no cookie (so a new
# visitor) and no local storage; what stays is what the browser cached, Streamlit's code and its
# compiled form, as for a visitor who comes back: a first visit costs 10-19 % less CPU that way
# (bench/README.md: issue 24, ninth pass). A first visit with nothing cached is what the cold
# start's tests and bench/bench_pageload.py measure, in contexts of their own.
_POOLED: dict[tuple[int, str], Any] = {}


def pooled_context(browser: Any, **options: Any) -> Any:
    """A context with these options from the pool, made if there is none (see `release`)."""
    key = (id(browser), repr(sorted(options.items())))
    context = _POOLED.get(key)
    if context is None:
        context = browser.new_context(**options)
        context.on("close", lambda _c, key=key: _POOLED.pop(key, None))
        _POOLED[key] = context
    return context


def pooled(context: Any) -> bool:
    return any(c is context for c in _POOLED.values())


_KEEPERS: dict[int, Any] = {}  # id(context) -> the page that keeps its renderer alive


def keep_renderer(context: Any, url: str) -> None:
    """Open a page of the context at URL's health check, unless one is open: it holds a renderer
    process locked to the loopback's site, which every later tab of the context joins under
    TEST_ARGS' limit, where the last tab's closing ended the renderer and the next tab started
    another (see TEST_ARGS). The health check is no Streamlit session: the server sees nothing."""
    key = id(context)
    keeper = _KEEPERS.get(key)
    if keeper is not None and not keeper.is_closed():
        return
    if keeper is None:
        context.on("close", lambda _c: _KEEPERS.pop(key, None))
    keeper = context.new_page()
    keeper.goto(f"{url}/_stcore/health")
    _KEEPERS[key] = keeper


def tabs(context: Any) -> list[Any]:
    """The context's pages that tests opened (not the page keep_renderer opened)."""
    keeper = _KEEPERS.get(id(context))
    return [page for page in context.pages if page is not keeper]


def release(context: Any) -> None:
    """The end of a test's use of a pooled context: its local storage is cleared and its tabs
    close (their Streamlit sessions end), then its cookies go."""
    for page in tabs(context):
        with contextlib.suppress(Exception):  # a crashed or closed page has nothing to clear
            page.evaluate("() => { try { localStorage.clear(); } catch (e) {} }")
        page.close()
    context.clear_cookies()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[bytes] | None = None, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"{url} not healthy after {timeout}s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=15)  # reaped: no "subprocess is still running" at teardown on a busy machine


@contextlib.contextmanager
def streamlit_server(
    env: dict[str, str] | None = None, args: list[str] | None = None, prefix: list[str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`streamlit run app.py` on a free loopback port; yields (base url, process). Test processes
    run side by side (pytest-xdist), so a port found free can be taken before the server binds
    it: a server that exits saying so is started again on another port (three tries)."""
    ARTIFACTS.mkdir(exist_ok=True)
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    for attempt in range(3):
        port = free_port()
        log = ARTIFACTS / f"streamlit-{port}.log"
        cmd = [
            *(prefix or []),  # e.g. scripts/cgroup.py's: the server started inside a memory cgroup
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless=true",
            f"--server.port={port}",
            "--server.address=127.0.0.1",
            "--browser.gatherUsageStats=false",
            *(args or []),
        ]
        with log.open("wb") as fh:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=fh, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, proc)
        except RuntimeError:
            _stop(proc)
            if attempt < 2 and "is not available" in log.read_text(errors="replace"):
                continue
            raise
        except BaseException:
            _stop(proc)
            raise
        try:
            yield url, proc
        finally:
            _stop(proc)
        return


def server_log(url: str) -> Path:
    """The log file streamlit_server writes for the server at URL."""
    return ARTIFACTS / f"streamlit-{url.rsplit(':', 1)[1]}.log"


class LogFrom:
    """A server's log from where it stood when this was made: a shared server's log holds what
    the modules before wrote too (conftest's _shared_server)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.start = path.stat().st_size if path.exists() else 0

    def read_text(self, errors: str = "replace") -> str:
        with self.path.open("rb") as fh:
            fh.seek(self.start)
            return fh.read().decode("utf-8", errors=errors)
