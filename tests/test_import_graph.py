"""No two attnviz modules import each other: every import statement in the package (at the top,
inside a function, or only for type checking), read with `ast`, gives an edge between modules;
no pair of modules has an edge both ways. A package's `__init__` and its own submodules are
one unit here (the `__init__` gathers what they define)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attnviz"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom | ast.Import, known: set[str]) -> set[str]:
    """The attnviz modules an import statement reaches (a name imported from a package is its
    submodule when there is one, else the package)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in known}
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    if node.level:
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, node.module] if node.module else base)
    else:
        target = node.module or ""
    if target not in known:
        return set()
    found = set()
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        found.add(sub if sub in known else target)
    return found


def _edges() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets |= _resolve(name, is_package, node, known)
        edges[name] = targets - {name}
    return edges


def _unit(a: str, b: str) -> bool:
    """a is a package and b one of its own submodules (or the other way round)."""
    return b.startswith(a + ".") or a.startswith(b + ".")


def test_the_graph_is_read_at_all() -> None:
    edges = _edges()
    assert "attnviz.corpus.progress" in edges["attnviz.corpus.engine"]
    assert "attnviz.corpus.engine" in edges["attnviz.corpus"]
    assert "attnviz.models.tokens" in edges["attnviz.models.base"]


def test_no_two_modules_import_each_other() -> None:
    edges = _edges()
    both_ways = sorted(
        (a, b)
        for a, targets in edges.items()
        for b in targets
        if a < b and a in edges.get(b, set()) and not _unit(a, b)
    )
    assert both_ways == []
