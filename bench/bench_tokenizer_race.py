"""Tokenizing beside other threads without shared truncation state: what each way costs.

    .venv/bin/python bench/bench_tokenizer_race.py            # --threads 4 --calls 40

A Hugging Face fast tokenizer keeps truncation and padding as state on its Rust backend, set by
each `__call__` (`set_truncation_and_padding`), so a count without truncation beside another
thread's encode cut to 512 tokens may hand that encode the whole text. One "call" here is what
`RunnerBase.encode` asks of the tokenizer: the text cut to 512 tokens (ids, special-token mask,
offsets) and the whole text's token count. Side by side in one process, on MiniLM's tokenizer,
`--threads` threads at once (each its own texts), wall time over all calls:

- shared, unguarded: transformers' two calls as the runners made them before (wrong under
  threads: the reference for cost only);
- one lock: the same calls, each holding the backend's lock (`models.tokens.tokenizer_lock`);
- a copy per thread: `copy.deepcopy` of the tokenizer once in each thread (its cost in its column);
- explicit limits, one lock: the backend called directly under its lock, its truncation set for
  the call: the whole text encoded (the count), and again cut to the limit only when it is
  longer, without transformers' wrapping (`models.tokens.encode_counted`, what the runners use).
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 512


def _texts(words: list[str], n_words: int, count: int) -> list[str]:
    return [" ".join(words[(i * 7 + k) % len(words)] for i in range(n_words)) for k in range(count)]


def unguarded(tok: Any) -> Callable[[str], int]:
    def call(text: str) -> int:
        enc = tok(text, truncation=True, max_length=LIMIT, return_special_tokens_mask=True, return_offsets_mapping=True)
        n = len(tok(text, truncation=False, verbose=False, return_attention_mask=False)["input_ids"])
        return min(len(enc["input_ids"]), n)

    return call


def locked(tok: Any) -> Callable[[str], int]:
    from attnviz.models.tokens import tokenizer_lock

    inner = unguarded(tok)

    def call(text: str) -> int:
        with tokenizer_lock(tok):
            return inner(text)

    return call


def per_thread(tok: Any) -> tuple[Callable[[str], int], list[float]]:
    local = threading.local()
    copies: list[float] = []

    def call(text: str) -> int:
        mine = getattr(local, "tok", None)
        if mine is None:
            t0 = time.perf_counter()
            mine = local.tok = copy.deepcopy(tok)
            copies.append(time.perf_counter() - t0)
        return unguarded(mine)(text)

    return call, copies


def explicit(tok: Any) -> Callable[[str], int]:
    from attnviz.models.tokens import encode_counted

    def call(text: str) -> int:
        enc, n = encode_counted(tok, text, LIMIT)
        _ = (enc.ids, enc.special_tokens_mask, enc.offsets, enc.word_ids)
        return min(len(enc.ids), n)

    return call


def run(call: Callable[[str], int], texts: list[str], threads: int, calls: int) -> float:
    """Seconds a call: `threads` threads each making `calls` calls over its share of `texts`."""
    start = threading.Barrier(threads + 1)

    def work(k: int) -> None:
        start.wait()
        for i in range(calls):
            call(texts[(k + i * threads) % len(texts)])

    pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in pool:
        t.join()
    return (time.perf_counter() - t0) / (threads * calls)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--words", type=int, nargs="+", default=[12, 3000])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    from attnviz.models.loading import _hf_tokenizer

    tok = _hf_tokenizer()  # transformers' MiniLM tokenizer (fast), as the loaded model holds it
    words = (ROOT / "README.md").read_text(encoding="utf-8").split()
    print(
        f"MiniLM's tokenizer ({type(tok).__name__}), {args.threads} threads x {args.calls} calls, "
        f"{os.cpu_count()} cores, median of {args.repeats} interleaved runs; ms a call (encode cut to "
        f"{LIMIT} + whole count)\n"
    )
    print("| words | shared, unguarded (wrong) | one lock | a copy per thread | explicit limits, one lock |")
    print("|---:|---:|---:|---:|---:|")
    copy_costs: list[float] = []
    for n_words in args.words:
        texts = _texts(words, n_words, 2 * args.threads)
        times: dict[str, list[float]] = {k: [] for k in ("unguarded", "lock", "copy", "explicit")}
        for _ in range(args.repeats):
            times["unguarded"].append(run(unguarded(tok), texts, args.threads, args.calls))
            times["lock"].append(run(locked(tok), texts, args.threads, args.calls))
            call, copies = per_thread(tok)
            times["copy"].append(run(call, texts, args.threads, args.calls))
            copy_costs += copies
            times["explicit"].append(run(explicit(tok), texts, args.threads, args.calls))
        ms = {k: statistics.median(v) * 1000 for k, v in times.items()}
        row = [ms[k] for k in ("unguarded", "lock", "copy", "explicit")]
        print(f"| {n_words} | " + " | ".join(f"{v:.3f}" for v in row) + " |")
    print(
        f"\na copy per thread: {statistics.median(copy_costs) * 1000:.1f} ms to deep-copy the tokenizer, "
        f"once a thread (counted in its column; Streamlit runs each rerun of a page in a new thread)"
    )


if __name__ == "__main__":
    main()
