"""The shape of the project (docs/ARCHITECTURE.md): what may import what, and how large a
module or function may grow before it should be split."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attnviz"
APP = PACKAGE / "app"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_PAGE_LINES = 50


def _modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_top_level_layout_is_the_designed_one() -> None:
    for name in ("app.py", "pages", "attnviz", "assets", "requirements.txt", "Dockerfile"):
        assert (ROOT / name).exists(), name
    assert not (ROOT / "app_pages").exists()


def test_only_the_app_subpackage_imports_streamlit() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in _modules(PACKAGE)
        if APP not in p.parents and any(n == "streamlit" or n.startswith("streamlit.") for n in _imports(p))
    ]
    assert offenders == []


NUMPY_ONLY = (
    "rollout",
    "flow",
    "agreement",
    "pairs",
    "sinks",
)  # explain/ modules docs/ARCHITECTURE.md calls numpy-only


@pytest.mark.parametrize("name", NUMPY_ONLY)
def test_the_numpy_only_explanation_modules_import_no_torch(name: str) -> None:
    imported = _imports(PACKAGE / "explain" / f"{name}.py")
    assert not any(n == "torch" or n.startswith("torch.") for n in imported), f"explain/{name}.py imports torch"


def test_importing_the_core_package_does_not_load_streamlit() -> None:
    import subprocess
    import sys

    code = (
        "import sys, attnviz, attnviz.views, attnviz.explain, attnviz.models, attnviz.lab, attnviz.focus;"
        "print('streamlit' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("path", [*_modules(PACKAGE), ROOT / "app.py"], ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_and_functions_stay_small(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= MAX_MODULE_LINES
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            assert length <= MAX_FUNCTION_LINES, f"{node.name} has {length} lines"


@pytest.mark.parametrize("path", _modules(ROOT / "pages"), ids=lambda p: p.name)
def test_pages_read_like_a_table_of_contents(path: Path) -> None:
    """A page reads widgets and calls the package: no functions, no classes, no other imports."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    assert len(source.splitlines()) <= MAX_PAGE_LINES
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Lambda))]
    assert _imports(path) <= {"streamlit", "attnviz.app", "attnviz.app.coldstart", "attnviz.app.sections"}
