"""The first pictures of the Caveats, Corpus and Training pages (issue 23.4): what they draw is
the bundled numbers or the task's own pattern, nothing invented; the bundled corpus example
is what a run of the embedded model gives; hostile or broken files draw nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attnviz.corpus.example import EXAMPLE_SENTENCES, EXAMPLE_STAT, EXAMPLES, compute_example, load_example
from attnviz.training.scores import induction_cols
from attnviz.training.tasks import make_task
from attnviz.views.examples import method_agreement, pattern_map, target_map

ROOT = Path(__file__).resolve().parents[1]


def test_the_caveats_bars_are_the_bundled_averages_in_both_languages() -> None:
    data = json.loads((ROOT / "assets" / "faithfulness_average.json").read_text(encoding="utf-8"))
    numbers = [r["spearman"] for r in data["rows"] if isinstance(r["spearman"], float) and np.isfinite(r["spearman"])]
    want = sorted(numbers)
    assert len(want) >= 5  # a method without a number (the random baseline) is left out
    for lang in ("en", "zh"):
        bar = method_agreement(data["rows"], lang=lang).data[0]
        assert list(bar.x) == want
        assert len(set(bar.y)) == len(want)  # every method named, none twice
    hostile = [{"method": "<img src=x onerror=alert(1)>", "spearman": 0.5}, {"method": "x", "spearman": None}]
    bar = method_agreement(hostile).data[0]
    assert list(bar.x) == [0.5] and "<img" not in bar.y[0]


def test_the_target_map_reads_one_earlier_token_a_row() -> None:
    z = target_map(6, [-1, 0, 1, 9, 2, 4])
    assert z.shape == (6, 6) and np.all(np.triu(z, 1) == 0)  # causal: nothing after the row
    assert z.sum(axis=1).tolist() == [0, 1, 1, 0, 1, 1]  # -1 and out of range: an empty row
    assert z[4, 2] == 1 and z[5, 4] == 1


def test_the_training_picture_is_the_induction_pattern_of_the_probe() -> None:
    task = make_task("induction")
    probe = task.probe(0)
    tokens = [task.vocab[i] for i in probe.ids]
    fig = pattern_map(tokens, probe.patterns["induction"], title="t")
    z = np.asarray(fig.data[0].z)
    period = (len(tokens) - 1) // 2
    cols = induction_cols(len(tokens), period)
    rows = np.flatnonzero(cols >= 0)
    assert rows.size > 0 and z.sum() == rows.size
    assert np.all(z[rows, cols[rows]] == 1)


def test_the_text_picture_escapes_what_the_visitor_pasted() -> None:
    task = make_task("text", text="<b>bold</b> & <script>x</script> more words here", block=32)
    probe = task.probe(0)
    fig = pattern_map([task.vocab[i] for i in probe.ids], probe.patterns["previous"], title="t")
    assert not any("<" in str(v) for v in fig.layout.xaxis.ticktext)


@pytest.mark.parametrize(
    "text",
    ["", "not json", json.dumps({"mean": [[0.1]], "std": [[0.1, 0.2]], "sentences": 3}),
     json.dumps({"mean": [0.1], "std": [0.1], "sentences": 3}), json.dumps({"mean": [[0.1]], "std": [[0.1]], "sentences": 0}),
     json.dumps({"mean": [[1] * 100] * 100, "std": [[1] * 100] * 100, "sentences": 3}), json.dumps([1, 2])],
)  # fmt: skip
def test_a_broken_example_file_draws_nothing(tmp_path: Path, text: str) -> None:
    path = tmp_path / "example.json"
    path.write_text(text, encoding="utf-8")
    assert load_example(path) is None
    assert load_example(tmp_path / "missing.json") is None


@pytest.mark.parametrize(("lang", "model", "shape"), [("en", "minilm", (6, 12)), ("zh", "e5-small", (12, 12))])
def test_the_bundled_corpus_example_is_well_formed(lang: str, model: str, shape: tuple[int, int]) -> None:
    """Each language's example: its own bundled sentences, with a model that reads them."""
    example = load_example(lang=lang)
    assert example is not None and example["stat"] == EXAMPLE_STAT and example["model"] == model
    assert example["source"] == f"{lang}.txt"
    assert example["sentences"] == EXAMPLE_SENTENCES and example["mean"].shape == shape
    assert np.all((example["mean"] >= 0) & (example["mean"] <= 1))
    assert example["mean"].max() > 0.5  # a previous-token head stands out, as the caption says


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_bundled_corpus_example_is_what_a_run_gives(lang: str) -> None:
    bundled = json.loads(EXAMPLES[lang][0].read_text(encoding="utf-8"))
    fresh = compute_example(lang=lang)
    assert fresh["sentences"] == bundled["sentences"] and fresh["model"] == bundled["model"]
    np.testing.assert_allclose(fresh["mean"], bundled["mean"], atol=2e-4)
    np.testing.assert_allclose(fresh["std"], bundled["std"], atol=2e-4)
