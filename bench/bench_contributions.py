"""What the whole-layer methods and the faithfulness scoreboard cost, next to the forward pass.

    .venv/bin/python bench/bench_contributions.py [--sizes 16 128 512] [--repeat 3] [--out FILE]

For each size n (tokens, specials included) with the embedded model: the forward pass
(`model.attend`, the reference), then `explain.contributions` for each method (goal at 128
tokens: at most 1 s each), and the scoreboard (`explain.faithfulness`) for one token and for the
sentence embedding (goal at 128 tokens: at most 3 s). Value Zeroing and the scoreboard cut their
input to 128 tokens by default, with a note: the 512 row shows that capped cost. Beside Value
Zeroing, the authors' loop (rerun the whole layer once per token, `Runner.layer_trace` with a
zeroed value) at up to 128 tokens, for one layer, times the number of layers.

Times are the best of --repeat runs, interleaved so that every function meets the same load
on a shared machine. Prints a markdown table and writes it, with the command, to --out
(bench/results_contributions.md by default).
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import attnviz  # noqa: E402
from attnviz import explain  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from bench_explain import device_line, text_of  # noqa: E402

GOAL_METHOD_S = 1.0
GOAL_SCOREBOARD_S = 3.0
REFERENCE_MAX_N = 128  # the per-token rerun loop beyond this takes minutes


def timed(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, tuple[float, float]]:
    """{name: (best, median)} seconds over `repeat` interleaved rounds after one warm-up round."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for round_ in range(repeat + 1):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            if round_:
                times[name].append(time.perf_counter() - start)
    return {name: (min(t), statistics.median(t)) for name, t in times.items()}


def rerun_per_token(model: attnviz.PretrainedModel, text: str, layer: int = 0) -> None:
    """The authors' Value Zeroing loop for one layer: the layer run again once per token."""
    enc = model.encode(text)
    n = len(enc.tokens)
    with torch.inference_mode():
        for j in range(n):
            scale = torch.ones(1, n)
            scale[0, j] = 0
            model.layer_trace(enc.inputs, layer, value_scale=scale)


def row(model: attnviz.PretrainedModel, n: int, repeat: int) -> tuple[list[str], list[str]]:
    text = text_of(model, n)
    query = min(n, explain.FAITHFULNESS_MAX_TOKENS) // 2  # within the scoreboard's cut
    fns: dict[str, Callable[[], object]] = {"attend": lambda: model.attend(text)}
    for method in explain.CONTRIBUTION_METHODS:
        fns[method] = lambda m=method: explain.contributions(model, text, m)
    if n <= REFERENCE_MAX_N:
        fns["vz_rerun_one_layer"] = lambda: rerun_per_token(model, text)
    fns["scoreboard_token"] = lambda: explain.faithfulness(model, text, query)
    fns["scoreboard_sentence"] = lambda: explain.faithfulness(model, text, None)
    t = timed(fns, repeat)
    cut = min(n, explain.VALUE_ZEROING_MAX_TOKENS)

    def mark(name: str, goal: float) -> str:  # the goals are set at 128 tokens
        best = t[name][0]
        return f"{best:.3f}" + ((" ok" if best <= goal else " over") if n == 128 else "")

    cells = [str(n), f"{t['attend'][0]:.3f}", *(mark(m, GOAL_METHOD_S) for m in explain.CONTRIBUTION_METHODS)]
    rerun = t.get("vz_rerun_one_layer")
    cells.append("—" if rerun is None else f"{rerun[0] * model.n_layers:.2f}")
    cells += [mark("scoreboard_token", GOAL_SCOREBOARD_S), mark("scoreboard_sentence", GOAL_SCOREBOARD_S)]
    medians = [f"{n}", *(f"{t[k][1]:.3f}" for k in fns)]
    if cut < n:
        cells[0] = f"{n} (Value Zeroing and scoreboard cut to {cut})"
    return cells, medians


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[16, 128, 512])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default=str(ROOT / "bench" / "results_contributions.md"))
    args = p.parse_args()
    model = attnviz.load_model("minilm", device="cpu")
    methods = list(explain.CONTRIBUTION_METHODS)
    header = [
        "tokens",
        "attend (s)",
        *(f"{m} (s)" for m in methods),
        "VZ authors' loop (s)",
        "scoreboard token (s)",
        "scoreboard sentence (s)",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---:|" * len(header)]
    medians = []
    for n in args.sizes:
        cells, med = row(model, n, args.repeat)
        lines.append("| " + " | ".join(cells) + " |")
        medians.append(" ".join(med))
        print(lines[-1], flush=True)
    out = [
        "# Whole-layer contributions and the scoreboard: cost",
        "",
        "```bash",
        ".venv/bin/" + shlex.join(["python", "bench/bench_contributions.py", *sys.argv[1:]]),
        "```",
        "",
        device_line() + f"; best of {args.repeat} interleaved runs. Goals at 128 tokens: each method <= "
        f"{GOAL_METHOD_S:.0f} s, the scoreboard <= {GOAL_SCOREBOARD_S:.0f} s (ok / over).",
        "",
        *lines,
        "",
        "Medians, in the order of the columns (the authors' loop for one layer): " + "; ".join(medians),
    ]
    Path(args.out).write_text("\n".join(out) + "\n", encoding="utf-8")
    print("\n".join(out))


if __name__ == "__main__":
    main()
