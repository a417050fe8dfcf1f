"""A corpus file the readers refuse (a compression bomb) ends its run as "refused": the page says
so with the reader's one sentence and offers no Resume, which would only read the same file and
refuse it again. A run stopped for any other reason keeps its Resume (tests/test_app_corpus.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from streamlit.testing.v1 import AppTest

from attnviz import i18n
from attnviz.app.server import corpus_jobs as jobs
from attnviz.app.server import registry
from attnviz.config import settings_from_env

APP = str(Path(__file__).resolve().parent / "app_entry.py")
SESSION = "test session id"  # AppTest's session id, the key of its corpus job


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_MAX_TOKENS", "ATTNVIZ_CORPUS_SENTENCES"):
        monkeypatch.delenv(key, raising=False)
    yield
    jobs.discard(SESSION)


def _bomb(path: Path) -> Path:
    """2,048 rows of one 1 MiB string in a few hundred bytes (issue 26's attack, tests/test_readers_bounds.py)."""
    rows = pa.DictionaryArray.from_arrays(pa.array([0] * 2048, pa.int32()), pa.array(["x" * (1 << 20)]))
    pq.write_table(pa.table({"text": rows}), path, compression="zstd", use_dictionary=True, store_schema=False)
    return path


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_a_refused_file_says_why_and_offers_no_resume(lang: str, tmp_path: Path) -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["lang"] = lang
    at.run()
    at.switch_page("../pages/corpus.py").run()
    assert not at.exception, [e.value for e in at.exception]
    folder = jobs.new_folder()
    runner = registry.REGISTRY.get(("minilm", "auto", ()), lambda: registry.load("minilm", "auto", 128, {}))
    job = jobs.Job(
        session=SESSION, folder=folder, input=_bomb(tmp_path / "bomb.parquet"), label="bomb.parquet",
        runner=runner, model_key=("minilm", "auto", ()), max_tokens=128, limit=100,
        budget_s=float(settings_from_env().budget_s),
    )  # fmt: skip
    jobs.start(job)
    deadline = time.monotonic() + 120
    while job.active:
        assert time.monotonic() < deadline, "the refused run did not end"
        time.sleep(0.05)
    assert job.state == "refused" and job.error is not None and "compression bomb" in job.error
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert any(i18n.t("corpus.refused", lang) in e and "compression bomb" in e for e in errors), errors
    assert not [b for b in at.button if b.key == "corpus_resume"]
