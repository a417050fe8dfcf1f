"""Light imports (issue 24): the settings, the figures and the URL parsing do not import torch,
and every public name of `attnviz` is still importable where it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from attnviz import i18n

ROOT = Path(__file__).resolve().parents[1]
LIGHT = ("attnviz.views", "attnviz.config", "attnviz.app.urls")

PROBE = """
import json, sys
found = {}
for name in %r:
    __import__(name)
    found[name] = sorted(m for m in ("torch", "transformers") if m in sys.modules)
print(json.dumps(found))
"""


def fresh_python(code: str) -> Any:
    """`code` run in a fresh interpreter, this checkout first on its path: its last line of
    output read as JSON (what a probe of `sys.modules` reports)."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_views_config_and_urls_do_not_import_torch() -> None:
    """One fresh interpreter imports the three, one after the other, and reports what came with them."""
    assert fresh_python(PROBE % (LIGHT,)) == {name: [] for name in LIGHT}


@pytest.mark.parametrize(
    "name",
    ["DEFAULT_MAX_TOKENS", "EMBEDDED_MODEL", "Attention", "ModelLoadError", "PretrainedModel", "Runner",
     "ScratchModel", "__version__", "load_model", "resolve_device"],
)  # fmt: skip
def test_public_names_of_attnviz(name: str) -> None:
    import attnviz

    assert name in attnviz.__all__
    assert getattr(attnviz, name) is not None
    assert name in dir(attnviz)


def test_models_names_are_the_modules_own() -> None:
    """The lazy names are the very objects of the modules that define them (no copies)."""
    import attnviz
    from attnviz import models
    from attnviz.models import base, errors, gate, loading, names, tokens

    for name in models.__all__:
        assert getattr(models, name) is not None, name
    assert attnviz.load_model is loading.load_model is models.load_model
    assert attnviz.ModelLoadError is base.ModelLoadError is models.ModelLoadError is errors.ModelLoadError
    assert models.Progress is gate.Progress and models.Cancelled is gate.Cancelled
    assert loading.check_model_name is names.check_model_name is models.check_model_name
    assert attnviz.EMBEDDED_MODEL == loading.EMBEDDED_MODEL == "minilm"
    assert attnviz.DEFAULT_MAX_TOKENS == tokens.DEFAULT_MAX_TOKENS
    with pytest.raises(AttributeError):
        _ = models.no_such_name
    with pytest.raises(AttributeError):
        _ = attnviz.no_such_name


# The command line in a fresh interpreter: its help, a refused input, and what --json writes with.
CLI_PROBE = """
import contextlib, io, json, sys
from attnviz.__main__ import main
found = {}
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        main(["--help"])
    except SystemExit as stop:
        found["help"] = [stop.code, "usage:" in out.getvalue()]
found["after help"] = sorted(m for m in ("torch", "transformers", "plotly") if m in sys.modules)
with contextlib.redirect_stderr(io.StringIO()) as err:
    found["empty"] = [main(["  "]), err.getvalue().strip()]
found["after a refused text"] = sorted(m for m in ("torch", "transformers", "plotly") if m in sys.modules)
import attnviz.export
found["export"] = sorted(m for m in ("torch", "transformers", "plotly") if m in sys.modules)
print(json.dumps(found))
"""


def test_the_command_lines_help_and_refusals_import_no_torch_and_json_no_plotly() -> None:
    """`attnviz --help` and a refused text answer at once (torch's import was two seconds of
    each); the exports of numbers (--json, CSV) need no plotly: only the HTML page and images
    import it."""
    found = fresh_python(CLI_PROBE)
    assert found["help"] == [0, True]
    assert found["empty"] == [2, f"attnviz: error: {i18n.t('err.empty', 'en')}"]  # the catalogue's English
    assert found["after help"] == found["after a refused text"] == found["export"] == []


# Three commands of the embedded model and the training lab, one after another in one fresh
# interpreter: none needs transformers (3-4 CPU-s to import), only the quick paths.
QUICK_PROBE = """
import contextlib, io, json, pathlib, sys, tempfile
from attnviz.__main__ import main
out = pathlib.Path(tempfile.mkdtemp())
(out / "tiny.txt").write_text("The cat sat.\\nA dog ran.\\n", encoding="utf-8")
codes = []
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    codes.append(main(["train", "--task", "copy", "--steps", "2", "--json", str(out / "copy.json")]))
    codes.append(main(["corpus", str(out / "tiny.txt"), "--out", str(out / "corpus"), "--quiet"]))
    codes.append(main(["evidence", "dog bites man", "--sinks", "--json", str(out / "sinks.json")]))
sinks = json.loads((out / "sinks.json").read_text(encoding="utf-8"))
print(json.dumps([codes, sorted(p.name for p in (out / "corpus").iterdir()), "[CLS]" in sinks["parked"],
                  "transformers" in sys.modules]))
"""


def test_train_corpus_and_the_sink_heads_run_without_transformers() -> None:
    """`attnviz train` (its tokenizer: training/runner.py), `attnviz corpus` (padded batches
    through the quick MiniLM) and `attnviz evidence --sinks` (the norms from the attention's own
    pass) answer without importing transformers: 7.9 -> 6.7, 6.9 -> 2.2 and 5.1 -> 2.1 s."""
    found = fresh_python(QUICK_PROBE)
    assert found == [[0, 0, 0], ["heads.parquet", "report.json", "sentences.parquet"], True, False]
