"""Corpus throughput: the local engine's batches against a loop of `attend`, the Ray engine on
the same machine, and peak memory as the corpus grows.

    .venv/bin/python bench/bench_corpus.py [--sentences 2000] [--loop 500] [--memory 1000 10000]
                                           [--no-ray] [--out bench/results_corpus.md]

The corpus is the bundled one (assets/corpus/*.txt) repeated with a number in each line, so
every sentence is distinct; 128 tokens at most, the embedded model on the CPU with torch's
default threads. Rows, each sentences per second (wall time, reading and writing included):

- loop of attend: `model.attend(text)` one sentence at a time (the first --loop sentences);
- loop of attend + head_stats: the same, with the statistics the corpus run writes (the
  reference: the same numbers, one at a time);
- local engine: `attnviz.corpus.run(..., engine="local")` on the whole file;
- Ray engine: `attnviz.corpus.run(..., engine="ray")` on a local Ray instance with every CPU,
  reported with and without Ray's start (starting Ray and its workers, loading the model in
  each worker), the start estimated by a 16-sentence run.

Peak memory: `attnviz.corpus.run` in a fresh process for each size in --memory; the peak
resident set size of that process (ru_maxrss), which stays flat when the run streams.
Prints a markdown table and writes it, with the command and the machine, to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import attnviz  # noqa: E402
from attnviz import corpus, explain  # noqa: E402
from bench.bench_explain import cpu_name  # noqa: E402

BUNDLED = ROOT / "assets" / "corpus"
GOAL_SPEEDUP = 2.0


def write_corpus(path: Path, n: int) -> Path:
    """n distinct lines: the bundled sentences in turn, each with its line number."""
    base = [line for f in ("en.txt", "zh.txt") for line in (BUNDLED / f).read_text(encoding="utf-8").splitlines()]
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(f"{base[i % len(base)]} ({i})\n")
    return path


def child(path: str, out: str, engine: str) -> None:
    """One run in this process; prints its numbers as JSON (used for the memory rows)."""
    start = time.perf_counter()
    result = corpus.run(path, out, "minilm", engine=engine, device="cpu")
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    out_mb = os.path.getsize(os.path.join(out, "sentences.parquet")) / 2**20
    print(json.dumps({"sentences": result.analysed, "seconds": seconds, "peak_mb": peak_mb, "out_mb": out_mb}))


def in_child(path: Path, out: Path, engine: str = "local") -> dict[str, float]:
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from bench.bench_corpus import child; child(*sys.argv[1:])"
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), str(out), engine], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def machine() -> str:
    cpu = cpu_name()
    load = ", load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()) if hasattr(os, "getloadavg") else ""
    return f"CPU: {cpu}, {os.cpu_count()} cores{load}; torch {torch.__version__} with {torch.get_num_threads()} threads"


def loop_rates(model: attnviz.PretrainedModel, texts: list[str]) -> tuple[float, float]:
    model.attend(texts[0], 128)  # warm
    start = time.perf_counter()
    for text in texts:
        model.attend(text, 128)
    attend_only = len(texts) / (time.perf_counter() - start)
    start = time.perf_counter()
    for text in texts:
        explain.head_stats(model.attend(text, 128))
    with_stats = len(texts) / (time.perf_counter() - start)
    return attend_only, with_stats


def ray_rates(path: Path, work: Path, n: int) -> tuple[float, float]:
    """(with Ray's start, without it). Ray's start (the instance, one actor a CPU, the model
    loaded in each) is estimated by a run of 16 sentences (one shard) and taken off."""
    tiny = write_corpus(work / "tiny.txt", 16)
    start = time.perf_counter()
    corpus.run(tiny, work / "ray-tiny", "minilm", engine="ray", device="cpu")
    overhead = time.perf_counter() - start
    start = time.perf_counter()
    corpus.run(path, work / "ray", "minilm", engine="ray", device="cpu")
    total = time.perf_counter() - start
    return n / total, n / max(total - overhead, 1e-9)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--loop", type=int, default=500, help="sentences for the loops of attend")
    parser.add_argument("--memory", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results_corpus.md")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="attnviz-bench-corpus-"))
    path = write_corpus(work / "corpus.txt", args.sentences)
    texts = path.read_text(encoding="utf-8").splitlines()[: args.loop]
    model = attnviz.load_model("minilm", device="cpu")
    attend_rate, stats_rate = loop_rates(model, texts)
    start = time.perf_counter()
    corpus.run(path, work / "local", model)
    local_rate = args.sentences / (time.perf_counter() - start)
    rows = [
        ("loop of attend", attend_rate, f"first {len(texts):,} sentences"),
        ("loop of attend + head_stats (same numbers)", stats_rate, f"first {len(texts):,} sentences"),
        ("local engine (batched)", local_rate, f"{local_rate / attend_rate:.1f}x the loop of attend"),
    ]
    if not args.no_ray:
        with_start, steady = ray_rates(path, work, args.sentences)
        cpus = os.cpu_count()
        rows.append((f"Ray engine, {cpus} CPU workers, with Ray's start", with_start, ""))
        rows.append(
            (f"Ray engine, {cpus} CPU workers, without Ray's start", steady, "start estimated by a 16-sentence run")
        )
    lines = [f"{args.sentences:,} sentences, 128 tokens at most; {machine()}", ""]
    lines += ["| engine | sentences/s | note |", "|---|---:|---|"]
    lines += [f"| {name} | {rate:.1f} | {note} |" for name, rate, note in rows]
    if args.memory:
        lines += ["", "| sentences | seconds | sentences/s | peak RSS (MB) | sentences.parquet (MB) |"]
        lines += ["|---:|---:|---:|---:|---:|"]
        for n in args.memory:
            m = in_child(write_corpus(work / f"mem-{n}.txt", n), work / f"mem-{n}")
            lines.append(
                f"| {n:,} | {m['seconds']:.1f} | {n / m['seconds']:.1f} | {m['peak_mb']:.0f} | {m['out_mb']:.1f} |"
            )
            print(lines[-1], flush=True)
    ok = local_rate >= GOAL_SPEEDUP * attend_rate
    lines += ["", f"goal: local engine at least {GOAL_SPEEDUP:.0f}x the loop of attend: {'met' if ok else 'NOT met'}"]
    table = "\n".join(lines)
    print(table)
    command = "python bench/bench_corpus.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    args.out.write_text(f"# Corpus throughput\n\n```bash\n{command}\n```\n\n{table}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
