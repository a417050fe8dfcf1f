"""The rule of docs/ARCHITECTURE.md that explanation methods see a model only through the
`Runner` protocol (models/base.py), held on the source of attnviz/explain/ itself:

- no module there imports transformers (or sentence-transformers), or a model family's module
  of attnviz.models (huggingface, scratch_runner, loading, switching) or the training package;
  from `attnviz.models` it takes only the protocol and its data types;
- wherever a function there takes a `Runner`, it asks of it only what the protocol declares
  (no `model.hf_model`, no `model.base_model.encoder.layer[i]`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from attnviz.models import Runner

ROOT = Path(__file__).resolve().parents[1]
# the methods; explain/cli.py is the command line, which loads a model by name as corpus/cli.py does
EXPLAIN = sorted(p for p in (ROOT / "attnviz" / "explain").glob("*.py") if p.name != "cli.py")
FORBIDDEN = ("transformers", "sentence_transformers", "attnviz.training")
FORBIDDEN_MODELS = ("huggingface", "scratch_runner", "loading", "switching")
# what explain/ may name from attnviz.models: the protocol and the types its methods pass around
PROTOCOL_TYPES = {"Runner", "Encoded", "Inputs", "Progress", "HeadMode", "Cancelled"}


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """(absolute module, imported names) of every import in the file, nested ones included."""
    package = "attnviz.explain"
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.append((module, [alias.name for alias in node.names]))
    return found


def protocol_members() -> set[str]:
    names = set(getattr(Runner, "__annotations__", {}))
    names |= {n for n, v in vars(Runner).items() if callable(v) and not n.startswith("_")}
    return names


@pytest.mark.parametrize("path", EXPLAIN, ids=lambda p: p.name)
def test_explain_imports_no_model_internals(path: Path) -> None:
    for module, names in imports(path):
        assert not module.startswith(FORBIDDEN), f"{path.name} imports {module}"
        assert not any(module == f"attnviz.models.{m}" for m in FORBIDDEN_MODELS), f"{path.name} imports {module}"
        if module == "attnviz.models":
            assert set(names) <= PROTOCOL_TYPES, f"{path.name} takes {set(names) - PROTOCOL_TYPES} from models"


def runner_uses(path: Path) -> list[tuple[str, int, str]]:
    """(function, line, attribute) for every attribute read on a parameter annotated `Runner`."""
    uses = []
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
        runners = {a.arg for a in params if a.annotation is not None and "Runner" in ast.unparse(a.annotation)}
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in runners:
                uses.append((fn.name, node.lineno, node.attr))
    return uses


def test_explain_asks_a_runner_only_what_the_protocol_declares() -> None:
    members = protocol_members()
    assert {"layers", "trace", "layer_trace", "switch_heads", "gate", "encode"} <= members  # read right
    seen = 0
    for path in EXPLAIN:
        for fn, line, attr in runner_uses(path):
            seen += 1
            assert attr in members, f"{path.name}:{line} {fn}() asks a Runner for .{attr}, not in the protocol"
    assert seen > 20  # the methods that run a model were found and checked


def test_the_check_catches_a_reach_into_the_model(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from ..models import Runner, PretrainedModel\n"
        "from transformers import AutoModel\n"
        "def f(model: Runner | None, text: str) -> None:\n"
        "    model.hf_model.base_model.encoder.layer[0]\n",
        encoding="utf-8",
    )
    assert [attr for _, _, attr in runner_uses(bad)] == ["hf_model"]
    found = dict((m, n) for m, n in imports(bad))
    assert found["attnviz.models"] == ["Runner", "PretrainedModel"] and "transformers" in found
