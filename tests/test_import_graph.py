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
    found = set()
    for alias in node.names:  # a folder without __init__ (app/sections) is no module, its files are
        sub = f"{target}.{alias.name}"
        if sub in known or target in known:
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
    assert "attnviz.app.sections.sinks" in edges["attnviz.app.sections.explorer"]  # `from . import sinks`


def test_no_two_modules_import_each_other() -> None:
    edges = _edges()
    both_ways = sorted(
        (a, b)
        for a, targets in edges.items()
        for b in targets
        if a < b and a in edges.get(b, set()) and not _unit(a, b)
    )
    assert both_ways == []


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of two modules or more (Tarjan), each sorted:
    every module of one reaches every other and back, through any number of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, set()):
            if _unit(v, w):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_circles_are_found_through_any_number_of_imports() -> None:
    ring = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(ring) == [["a", "b", "c"]]


def test_no_import_circle_of_any_length() -> None:
    """The sections reach their shared sentence (app/subject.py) and never each other in a ring,
    nor does any other group of modules."""
    assert _circles(_edges()) == []
