"""Every test that drives a real Chromium carries the `browser` marker, so `-m browser` selects
all of them and `-m "not browser"` none (a browser test without it ran, or was skipped, with
the quick tests). Read from the test files' source: a test is a browser test when it takes a
fixture that starts Chromium or an app server (conftest's, or one of its own module built on
them), or calls `browser()`, `streamlit_server()` or `chromium_path()` itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
BROWSER_FIXTURES = {"chromium", "server", "session", "_chromium_pool", "_shared_server"}  # tests/conftest.py
BROWSER_CALLS = {"browser", "streamlit_server", "chromium_path"}


def _marked_browser(decorators: list[ast.expr]) -> bool:
    return any("mark.browser" in ast.unparse(d) for d in decorators)


def _calls_browser(fn: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in BROWSER_CALLS for n in ast.walk(fn)
    )


def _params(fn: ast.FunctionDef) -> set[str]:
    return {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}


def unmarked_browser_tests(source: str) -> list[str]:
    tree = ast.parse(source)
    module_marked = any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
        and "mark.browser" in ast.unparse(node.value)
        for node in tree.body
    )
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    needs = set(BROWSER_FIXTURES)
    grew = True
    while grew:  # fixtures of the module built on a browser fixture, or starting one themselves
        grew = False
        for fn in functions:
            if not fn.name.startswith("test_") and fn.name not in needs and (_params(fn) & needs or _calls_browser(fn)):
                needs.add(fn.name)
                grew = True
    return [
        fn.name
        for fn in functions
        if fn.name.startswith("test_")
        and (_params(fn) & needs or _calls_browser(fn))
        and not (module_marked or _marked_browser(fn.decorator_list))
    ]


@pytest.mark.parametrize("path", sorted(TESTS.glob("test_*.py")), ids=lambda p: p.name)
def test_browser_tests_carry_the_browser_marker(path: Path) -> None:
    assert unmarked_browser_tests(path.read_text(encoding="utf-8")) == []


def test_the_check_finds_an_unmarked_one() -> None:
    source = (
        "import pytest\n"
        "@pytest.fixture\n"
        "def page(chromium): ...\n"
        "def test_a(page): ...\n"
        "@pytest.mark.browser\n"
        "def test_b(page): ...\n"
        "def test_c(tmp_path):\n"
        "    with browser() as b: ...\n"
        "def test_d(tmp_path): ...\n"
    )
    assert unmarked_browser_tests(source) == ["test_a", "test_c"]
    assert unmarked_browser_tests("import pytest\npytestmark = [pytest.mark.browser]\n" + source) == []
