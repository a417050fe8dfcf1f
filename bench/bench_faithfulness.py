"""The faithfulness scoreboard averaged over the bundled sentences, for the Caveats page.

    .venv/bin/python bench/bench_faithfulness.py [--limit N] [--out FILE] [--md FILE]

Runs `attnviz.explain.faithfulness` with the embedded model on every sentence of
assets/faithfulness_sentences.json (30 English, 20 Chinese), for the sentence embedding (the
output all-MiniLM-L6-v2 is made for: the mean of its last layer), and averages each method's
Spearman, Kendall, AOPC and AOPC over the random floor; `best_count` is how many sentences the
method had the largest AOPC on (ties count for each tied method). Writes the table as JSON to --out (assets/faithfulness_average.json,
read by the app) and as markdown to --md (bench/results_faithfulness.md), each with this command.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import attnviz  # noqa: E402
from attnviz import explain  # noqa: E402

SENTENCES = ROOT / "assets" / "faithfulness_sentences.json"
COLUMNS = ("spearman", "kendall", "aopc", "aopc_over_random")


def average(boards: list[explain.Scoreboard]) -> list[dict[str, float | int | str]]:
    """Mean of each column per method (NaN values left out), and on how many texts each had the
    largest AOPC (a tie counts for every method in it)."""
    methods = [r.method for r in boards[0].rows]
    best = [m for b in boards for m in b.leaders]
    rows: list[dict[str, float | int | str]] = []
    for m in methods:
        entry: dict[str, float | int | str] = {"method": m}
        for col in COLUMNS:
            values = np.array([next(r for r in b.table() if r["method"] == m)[col] for b in boards], dtype=float)
            entry[col] = round(float(np.nanmean(values)), 4) if np.isfinite(values).any() else math.nan
        entry["best_count"] = best.count(m)
        rows.append(entry)
    return rows


def markdown(rows: list[dict[str, float | int | str]]) -> list[str]:
    lines = ["| method | Spearman ρ | Kendall τ | AOPC | AOPC − random | best in |", "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        cells = ["—" if isinstance(r[c], float) and math.isnan(float(r[c])) else f"{float(r[c]):.3f}" for c in COLUMNS]
        lines.append(f"| {r['method']} | {' | '.join(cells)} | {r['best_count']} |")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--limit", type=int, default=0, help="only the first N English sentences (a smoke run)")
    p.add_argument("--out", default=str(ROOT / "assets" / "faithfulness_average.json"))
    p.add_argument("--md", default=str(ROOT / "bench" / "results_faithfulness.md"))
    args = p.parse_args()
    data = json.loads(SENTENCES.read_text(encoding="utf-8"))
    texts = {"en": data["en"][: args.limit], "zh": []} if args.limit else {"en": data["en"], "zh": data["zh"]}
    model = attnviz.load_model("minilm", device="cpu")
    boards: dict[str, list[explain.Scoreboard]] = {"en": [], "zh": []}
    start = time.perf_counter()
    for lang, items in texts.items():
        for text in items:
            boards[lang].append(explain.faithfulness(model, text, None))
    seconds = time.perf_counter() - start
    every = boards["en"] + boards["zh"]
    command = "python bench/bench_faithfulness.py" + (f" --limit {args.limit}" if args.limit else "")
    result = {
        "command": command,
        "model": model.name,
        "output": "sentence embedding (mean of the last layer)",
        "sentences": len(every),
        "seconds": round(seconds, 1),
        "torch": torch.__version__,
        "rows": average(every),
        "by_language": {lang: average(b) for lang, b in boards.items() if b},
    }
    Path(args.out).write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    lines = [
        "# Faithfulness scoreboard, averaged",
        "",
        "```bash",
        ".venv/bin/" + shlex.join(["python", "bench/bench_faithfulness.py", *sys.argv[1:]]),
        "```",
        "",
        f"{len(every)} sentences ({len(boards['en'])} English, {len(boards['zh'])} Chinese), {model.name}, "
        f"output: the sentence embedding; {seconds:.0f} s on {torch.get_num_threads()} CPU threads.",
        "",
        *markdown(result["rows"]),  # type: ignore[arg-type]
    ]
    for lang, rows in result["by_language"].items():  # type: ignore[attr-defined]
        lines += ["", f"Only {'English' if lang == 'en' else 'Chinese'}:", "", *markdown(rows)]
    Path(args.md).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
