"""`python -m attnviz train`: train a tiny model and write its snapshots and head scores. Exit
status 0 on success, 2 on bad input (one line on stderr, no traceback); the deployment's limits
(ATTNVIZ_TRAIN_MAX_*, attnviz/config.py) apply as in the app.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from .._cli import Parser, guarded, write_json
from ..config import settings_from_env
from .loop import TrainingRun, train
from .tasks import TASKS


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        "attnviz train", "Train a tiny causal model from attnviz's own attention and watch its heads specialise."
    )
    p.add_argument("--task", required=True, choices=TASKS, help="what to learn")
    p.add_argument("--steps", type=int, default=1500, help="training steps (default 1500)")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights and the data (default 0)")
    p.add_argument("--layers", type=int, default=2, help="layers (default 2)")
    p.add_argument("--heads", type=int, default=2, help="heads a layer (default 2)")
    p.add_argument("--d-model", type=int, default=64, help="width of the residual stream (default 64)")
    p.add_argument("--lr", type=float, default=2e-3, help="AdamW learning rate (default 0.002)")
    p.add_argument("--batch-size", type=int, default=64, help="sequences a step (default 64)")
    p.add_argument("--mlp", action="store_true", help="add an MLP after each attention (attention-only by default)")
    p.add_argument(
        "--threads", type=int, default=1, help="torch threads while training (default 1: fastest for models this small)"
    )
    p.add_argument("--snapshot-every", type=int, default=0, help="steps between snapshots (default: about 60 in all)")
    p.add_argument("--text", help="text task: the text to learn (any language)")
    p.add_argument("--text-file", metavar="FILE", help="text task: read the text from FILE (UTF-8; '-' for stdin)")
    p.add_argument("--json", metavar="OUT", help="write snapshots and scores as JSON to OUT ('-' for stdout)")
    return p


def to_json(run: TrainingRun) -> dict[str, object]:
    """The run as plain JSON: the text it learned from, config, the probe, every snapshot (step,
    loss, accuracy, head scores (layers, heads), the probe's maps (layers, heads, n, n)), a summary."""
    snaps = [
        {
            "step": snap.step,
            "loss": round(snap.loss, 6),
            "accuracy": round(snap.accuracy, 6),
            "scores": {k: np.round(v, 6).tolist() for k, v in scores.items()},
            "weights": snap.attention.weights.round(5).tolist(),
        }
        for snap, scores in zip(run.snapshots, run.snapshot_scores, strict=False)
    ]
    text = getattr(run.task, "text", None)  # the text task's (cleaned) text; otherwise what the maps read
    return {
        "task": run.config.task,
        "model": run.model.name,
        "vocab_size": len(run.task.vocab),
        "probe": {"text": run.probe.text, "tokens": run.snapshots[-1].attention.tokens},
        "scores_measured_on": "held-out batch",
        "snapshots": snaps,
        "summary": run.summary(),
        "text": text if isinstance(text, str) else run.probe.text,  # added last: the first keys stay put
    }


def _text(args: argparse.Namespace, max_chars: int) -> str | None:
    if args.task != "text":
        if args.text is not None or args.text_file is not None:
            raise ValueError("--text and --text-file are for --task text")
        return None
    if (args.text is None) == (args.text_file is None):
        raise ValueError("--task text needs exactly one of --text and --text-file")
    if args.text_file == "-":
        text = sys.stdin.read(max_chars + 1)
    elif args.text_file is not None:
        with open(args.text_file, encoding="utf-8") as fh:
            text = fh.read(max_chars + 1)
    else:
        text = args.text
    if len(text) > max_chars:
        raise ValueError(f"the text is longer than {max_chars:,} characters")
    return str(text)


def _progress_line(run: TrainingRun) -> None:
    snap = run.snapshots[-1]
    print(f"\rstep {snap.step:>6,}  loss {snap.loss:7.4f}  accuracy {snap.accuracy:6.1%}", end="", file=sys.stderr)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)

    def body() -> int:
        settings = settings_from_env()
        settings.check_training(args.steps, args.layers, args.heads, args.d_model)
        text = _text(args, settings.max_chars)
        show = _progress_line if sys.stderr.isatty() else None
        run = train(
            args.task, args.steps, args.seed, args.layers, args.heads, args.d_model, text=text, on_snapshot=show,
            lr=args.lr, batch_size=args.batch_size, mlp=args.mlp, snapshot_every=max(0, args.snapshot_every),
            threads=max(1, args.threads),
        )  # fmt: skip
        if show is not None:
            print(file=sys.stderr)
        if args.json:
            write_json(args.json, json.dumps(to_json(run), ensure_ascii=False).encode("utf-8"))
        if args.json != "-":  # standard output carries the JSON alone when asked for it
            _print_summary(run)
            if args.json:
                print(f"wrote {args.json}")
        return 0

    return guarded("attnviz train", body, (ValueError, OSError, UnicodeDecodeError))


def _print_summary(run: TrainingRun) -> None:
    cfg = run.config
    print(f"{cfg.task}: {cfg.layers} layers x {cfg.heads} heads, d_model {cfg.d_model}, seed {cfg.seed}")
    print(f"{'step':>7} {'loss':>8} {'accuracy':>9}")
    shown = run.snapshots[:: max(1, len(run.snapshots) // 10)]
    if shown[-1] is not run.snapshots[-1]:
        shown.append(run.snapshots[-1])
    for snap in shown:
        print(f"{snap.step:>7,} {snap.loss:>8.4f} {snap.accuracy:>9.1%}")
    for name, values in run.snapshot_scores[-1].items():
        best = ", ".join(f"layer {i}: head {int(np.argmax(v))} {float(np.max(v)):.2f}" for i, v in enumerate(values))
        print(f"{name} score, best head per layer: {best}")
    print(f"{run.seconds:.1f} s{' (stopped early)' if run.stopped else ''}")


if __name__ == "__main__":  # python -m attnviz.training.cli (the package's CLI wires `python -m attnviz train`)
    sys.exit(main(sys.argv[1:]))
