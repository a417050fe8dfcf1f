"""The Corpus page's first picture: one statistic of every head over the first EXAMPLE_SENTENCES
bundled sentences of each language, run once and kept in assets/corpus/.

    python -m attnviz.corpus.example      # writes both files again
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

BUNDLED = Path(__file__).resolve().parents[2] / "assets" / "corpus"
# language -> (the file kept, the bundled corpus it runs, the model that reads it)
EXAMPLES = {
    "en": (BUNDLED / "example.json", BUNDLED / "en.txt", "minilm"),
    "zh": (BUNDLED / "example_zh.json", BUNDLED / "zh.txt", "e5-small"),
}
EXAMPLE_SENTENCES = 40
EXAMPLE_STAT = "prev"  # the share on the previous token: previous-token heads stand out
MAX_HEADS = 64  # a file with more layers or heads than this is not the bundled example


def compute_example(lang: str = "en") -> dict[str, Any]:
    """Run the first EXAMPLE_SENTENCES lines of the bundled corpus of `lang` with its model
    (EXAMPLES) and keep one statistic's per-head mean and spread."""
    from .engine import run

    _file, source, model = EXAMPLES[lang]
    with tempfile.TemporaryDirectory() as out:
        result = run(source, out, model, limit=EXAMPLE_SENTENCES)
        return {
            "model": model,
            "source": source.name,
            "sentences": int(result.analysed),
            "stat": EXAMPLE_STAT,
            "mean": np.round(result.grid(EXAMPLE_STAT), 4).tolist(),
            "std": np.round(result.grid(EXAMPLE_STAT, "std"), 4).tolist(),
        }


def load_example(path: Path | None = None, lang: str = "en") -> dict[str, Any] | None:
    """The bundled example of `lang` (or the file `path`) with `mean` and `std` as (layers,
    heads) arrays; None when the file is missing or not what `compute_example` writes."""
    path = EXAMPLES.get(lang, EXAMPLES["en"])[0] if path is None else path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        mean = np.asarray(data["mean"], dtype=np.float64)
        std = np.asarray(data["std"], dtype=np.float64)
        sentences = int(data["sentences"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if mean.ndim != 2 or mean.shape != std.shape or not 0 < mean.size <= MAX_HEADS * MAX_HEADS or sentences < 1:
        return None
    return {**data, "mean": mean, "std": std, "sentences": sentences}


def main() -> int:  # pragma: no cover - the command that writes the bundled file
    for lang, (path, _source, _model) in EXAMPLES.items():
        data = compute_example(lang=lang)
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path} ({data['sentences']} sentences, {data['model']})")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
