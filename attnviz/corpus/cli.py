"""Command line: attnviz corpus INPUT --out DIR [options]. Wired as `python -m attnviz corpus`.

Exit status 0 when the run finished (also when DIR already held it), 2 on bad input, bad
options or a model that cannot be loaded (one line on stderr, no traceback), 130 when
interrupted (rerun the same command to continue).
"""

from __future__ import annotations

import argparse
import sys
import time

from .._cli import Parser, guarded
from ..models import EMBEDDED_MODEL, ModelLoadError
from .engine import DEFAULT_BATCH_SIZE, DEFAULT_CORPUS_TOKENS, DEFAULT_SHARD_SIZE, RunProgress, run
from .readers import DEFAULT_MAX_CHARS


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        "attnviz corpus",
        "Per-head attention statistics over a corpus, written as Parquet files. "
        "An interrupted run continues when the same command is run again.",
        prog="attnviz corpus",
    )
    p.add_argument("input", help="a .txt (one text a line), .csv or .jsonl (a 'text' column or field), or .parquet")
    p.add_argument("--out", required=True, help="output folder (a path, or a URI such as s3://bucket/run)")
    p.add_argument(
        "--model", default=EMBEDDED_MODEL, help="minilm (embedded, default), scratch, a Hugging Face id or a folder"
    )
    p.add_argument(
        "--max-tokens", type=int, default=DEFAULT_CORPUS_TOKENS, help="cut longer texts (flagged) (default 128)"
    )
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="texts a forward pass (default 32)")
    p.add_argument("--engine", choices=("local", "ray"), default="local", help="local (this process) or ray")
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), cpu or cuda")
    p.add_argument("--limit", type=int, default=None, help="read at most this many lines or rows")
    p.add_argument(
        "--max-chars", type=int, default=DEFAULT_MAX_CHARS, help=f"skip longer texts (default {DEFAULT_MAX_CHARS:,})"
    )
    p.add_argument(
        "--shard-size", type=int, default=DEFAULT_SHARD_SIZE, help="lines a shard: the most an interruption can cost"
    )
    p.add_argument(
        "--ray-address", default=None, help="a Ray cluster to join (default: RAY_ADDRESS, else start one here)"
    )
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 60}m {s % 60:02d}s" if s >= 60 else f"{s}s"


class ProgressLine:
    """Progress on stderr: rewritten in place on a terminal (at most 4 times a second), a new
    line every 10 seconds otherwise (a log file, CI)."""

    def __init__(self) -> None:
        self.stream = sys.stderr
        self.tty = self.stream.isatty()
        self.every = 0.25 if self.tty else 10.0
        self.last = 0.0

    def __call__(self, p: RunProgress) -> None:
        now = time.monotonic()
        if not p.finished and now - self.last < self.every:
            return
        self.last = now
        left = "" if p.eta_s is None else f", {_duration(p.eta_s)} left"
        resumed = f" ({p.resumed_records:,} done before)" if p.resumed_records else ""
        line = (
            f"attnviz: {p.records:,} lines{resumed}, {p.analysed:,} sentences analysed ({100 * p.fraction:.1f}%), "
            f"{p.rate:.1f} sentences/s{left}"
        )
        if self.tty:
            self.stream.write("\r\x1b[2K" + line + ("\n" if p.finished else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)

    def body() -> int:
        try:
            result = run(
                args.input,
                args.out,
                args.model,
                engine=args.engine,
                max_tokens=args.max_tokens,
                batch_size=args.batch_size,
                device=args.device,
                max_chars=args.max_chars,
                limit=args.limit,
                shard_size=args.shard_size,
                progress=None if args.quiet else ProgressLine(),
                ray_address=args.ray_address,
            )
        except KeyboardInterrupt:
            print("\nattnviz corpus: interrupted; run the same command again to continue", file=sys.stderr)
            return 130
        r = result.report
        reasons = ", ".join(f"{n:,} {why}" for why, n in r.get("skipped_by_reason", {}).items())
        skipped = f"; skipped {r['skipped']:,} ({reasons}, listed in report.json)" if r.get("skipped") else ""
        print(
            f"{r['lines_read']:,} lines read, {r['analysed']:,} sentences analysed "
            f"({r['truncated']:,} truncated){skipped}\n"
            f"wrote {result.location}: heads.parquet, sentences.parquet, report.json"
        )
        return 0

    return guarded("attnviz corpus", body, (ValueError, ModelLoadError, OSError))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
