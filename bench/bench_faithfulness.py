"""The faithfulness scoreboard averaged over the bundled sentences, for the Caveats page.

    .venv/bin/python bench/bench_faithfulness.py [--limit N] [--out FILE] [--md FILE]
    .venv/bin/python bench/bench_faithfulness.py --profile 128 [--repeat 3] [--md FILE]

Runs `attnviz.explain.faithfulness` with the embedded model on every sentence of
assets/faithfulness_sentences.json (30 English, 20 Chinese), for the sentence embedding (the
output all-MiniLM-L6-v2 is made for: the mean of its last layer), and averages each method's
Spearman, Kendall, AOPC and AOPC over the random floor; `best_count` is how many sentences the
method had the largest AOPC on (ties count for each tied method). Writes the table as JSON to --out (assets/faithfulness_average.json,
read by the app) and as markdown to --md (bench/results_faithfulness.md), each with this command.

--profile N: where one scoreboard's time goes at N tokens (the sentence embedding): the whole
call, the contribution methods, input x gradient, the masked forward passes (how many, the time
of one, the GFLOP/s they reach), and the same matrix products alone at their best rate, the
floor of the definition on this CPU. Best of --repeat rounds, interleaved. Its section of the
markdown file is kept when the average is rewritten, and the other way round.
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
    p.add_argument("--profile", type=int, metavar="N", help="profile one scoreboard at N tokens instead")
    p.add_argument("--repeat", type=int, default=3, help="--profile: rounds (best of)")
    args = p.parse_args()
    if args.profile:
        lines = profile_lines(args.profile, args.repeat)
        write_section(Path(args.md), lines, profile=True)
        print("\n".join(lines))
        return
    data = json.loads(SENTENCES.read_text(encoding="utf-8"))
    texts = {"en": data["en"][: args.limit], "zh": []} if args.limit else {"en": data["en"], "zh": data["zh"]}
    model = attnviz.load_model("minilm", device="cpu")
    start = time.perf_counter()
    boards = {lang: [explain.faithfulness(model, text, None) for text in items] for lang, items in texts.items()}
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
    write_section(Path(args.md), lines, profile=False)
    print("\n".join(lines))


PROFILE_MARK = "## Cost of one scoreboard"


def write_section(path: Path, lines: list[str], *, profile: bool) -> None:
    """Write the average (everything before PROFILE_MARK) or the profile (from it on), keeping
    the other part of the file as it is."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    head, mark, tail = old.partition(PROFILE_MARK)
    kept = (mark + tail).rstrip("\n") if not profile else head.rstrip("\n")
    parts = [kept, "\n".join(lines)] if profile else ["\n".join(lines), kept]
    path.write_text("\n\n".join(p for p in parts if p) + "\n", encoding="utf-8")


def forward_gflop(model: attnviz.PretrainedModel, n: int) -> float:
    """Multiply-adds x 2 of one forward pass of n tokens (matrix products only: Q, K, V, O, the
    feed-forward's two matrices, QK^T and AV in every layer)."""
    cfg = model.hf_model.config
    d, ff, layers = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers
    return 2 * layers * (n * (4 * d * d + 2 * d * ff) + 2 * n * n * d) / 1e9


def gemm_rate(model: attnviz.PretrainedModel, rows: int) -> float:
    """GFLOP/s of the forward's own matrix products alone at a batch's shape (rows x d @ d x d,
    d x 4d and 4d x d), the best of 200 runs of each: what this CPU reaches on these shapes."""
    cfg = model.hf_model.config
    d, ff = cfg.hidden_size, cfg.intermediate_size
    rates = []
    with torch.inference_mode():
        for k, m in ((d, d), (d, ff), (ff, d)):
            a, w = torch.randn(rows, k), torch.randn(k, m)
            best = math.inf
            for _ in range(200):
                start = time.perf_counter()
                a @ w
                best = min(best, time.perf_counter() - start)
            rates.append(2 * rows * k * m / best / 1e9)
    return max(rates)


def profile_lines(n: int, repeat: int) -> list[str]:
    """The --profile section: one scoreboard at n tokens and its parts, best of `repeat` rounds."""
    from attnviz.explain import scoreboard as sb
    from attnviz.explain._model import batch_size
    from attnviz.explain.removal import gradient_scores, removal_effects

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_contributions import timed
    from bench_explain import device_line, text_of

    model = attnviz.load_model("minilm", device="cpu")
    text = text_of(model, n)
    enc = model.encode(text, sb.FAITHFULNESS_MAX_TOKENS)
    names = [m for m in sb.SCOREBOARD_METHODS if m != "gradient"]
    scores, _, _ = sb._method_scores(model, enc, None, list(sb.SCOREBOARD_METHODS), sb.FAITHFULNESS_MAX_TOKENS, None)
    keep = ~enc.special
    removed = sb._steps(int(keep.sum()), 10)
    rng = np.random.default_rng(0)
    randoms = [rng.permutation(np.flatnonzero(keep)) for _ in range(4)]
    orders = [*(sb._order(scores[m], keep) for m in sb.SCOREBOARD_METHODS), *randoms]
    masks, _ = sb._masks(len(enc.tokens), keep, orders, removed)
    b = batch_size(model, len(enc.tokens), False)
    one = masks[:b]
    t = timed(
        {
            "scoreboard": lambda: explain.faithfulness(model, text, None),
            "methods": lambda: sb._method_scores(model, enc, None, names, sb.FAITHFULNESS_MAX_TOKENS, None),
            "gradient": lambda: gradient_scores(model, enc, None),
            "masked": lambda: removal_effects(model, enc, masks, None),
            "batch": lambda: removal_effects(model, enc, one, None),
        },
        repeat,
    )
    n_tok = len(enc.tokens)
    per_pass = (t["batch"][0]) / (len(one) + 1)  # removal_effects also runs the unmasked text
    gflop = forward_gflop(model, n_tok)
    peak = gemm_rate(model, b * n_tok)
    loo = int(keep.sum())
    floor = (len(masks) + 1) * gflop / peak
    return [
        PROFILE_MARK + f" at {n_tok} tokens (--profile)",
        "",
        "```bash",
        ".venv/bin/" + shlex.join(["python", "bench/bench_faithfulness.py", *sys.argv[1:]]),
        "```",
        "",
        device_line() + f"; best of {repeat} interleaved rounds (median in brackets).",
        "",
        "| part | seconds |",
        "|---|---:|",
        f"| whole scoreboard (sentence embedding) | {t['scoreboard'][0]:.2f} ({t['scoreboard'][1]:.2f}) |",
        f"| the five contribution methods (one recorded forward) | {t['methods'][0]:.2f} ({t['methods'][1]:.2f}) |",
        f"| input x gradient | {t['gradient'][0]:.2f} ({t['gradient'][1]:.2f}) |",
        f"| {len(masks)} masked texts ({loo} leave-one-out, {len(masks) - loo} deletion steps after sharing) | "
        f"{t['masked'][0]:.2f} ({t['masked'][1]:.2f}) |",
        "",
        f"One masked forward pass of {n_tok} tokens: {per_pass * 1000:.1f} ms in batches of {b} "
        f"({gflop:.2f} GFLOP: {gflop / per_pass:.0f} GFLOP/s). Its matrix products alone, at a batch's "
        f"shape: {peak:.0f} GFLOP/s. At that rate the {len(masks) + 1} passes alone take "
        f"{floor:.2f} s: the floor of the definition on this CPU, before any method is computed.",
    ]


if __name__ == "__main__":
    main()
