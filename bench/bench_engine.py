"""Warm `attend` time of the embedded model and the scratch encoder against a plain
transformers eager forward with output_attentions=True, measured side by side in one process.

    .venv/bin/python bench/bench_engine.py                 # 16, 128, 512 tokens
    .venv/bin/python bench/bench_engine.py --sizes 16      # CI smoke test
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import attnviz
from attnviz.models import embedded_model_dir

WORDS = "the animal did not cross the street because it was tired and the river bank was wide".split()  # noqa: SIM905


def text_of_tokens(tokenizer: object, n: int) -> str:
    """A text that tokenises to exactly n tokens ([CLS] and [SEP] included)."""
    words = (WORDS * (n // len(WORDS) + 2))[: max(n - 2, 1)]
    text = " ".join(words)
    assert len(tokenizer(text)["input_ids"]) == n, n  # type: ignore[operator]
    return text


def timed(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[16, 128, 512])
    ap.add_argument("--repeat", type=int, default=0, help="timed runs per cell (default: by size)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--out", help="also write the markdown table here")
    args = ap.parse_args()

    from transformers import AutoModel, AutoTokenizer

    minilm = attnviz.load_model("minilm", device=args.device)
    scratch = attnviz.load_model("scratch", device=args.device)
    device = minilm.device
    folder = str(embedded_model_dir())
    tok = AutoTokenizer.from_pretrained(folder)
    plain = AutoModel.from_pretrained(folder, attn_implementation="eager").eval().to(device)

    def reference(text: str) -> None:
        with torch.inference_mode():
            inputs = tok(text, return_tensors="pt").to(device)
            out = plain(**inputs, output_attentions=True)
            assert out.attentions and out.attentions[0] is not None
            if device.type == "cuda":
                torch.cuda.synchronize()

    def sync_attend(model: attnviz.PretrainedModel | attnviz.ScratchModel, text: str) -> None:
        model.attend(text)  # returns numpy: already synchronised

    rows = []
    for n in args.sizes:
        text = text_of_tokens(tok, n)
        repeat = args.repeat or (30 if n <= 128 else 8)
        for _ in range(2):  # warm up all three
            reference(text)
            sync_attend(minilm, text)
            sync_attend(scratch, text)
        # interleave so drift affects all three alike
        runs = [partial(reference, text), partial(sync_attend, minilm, text), partial(sync_attend, scratch, text)]
        samples: list[list[float]] = [[], [], []]
        for _ in range(repeat):
            for k, run in enumerate(runs):
                samples[k].append(timed(run, 1))
        r, m, s = (statistics.median(x) for x in samples)
        rows.append((n, r, m, s))

    lines = [
        f"device: {device} ({torch.get_num_threads()} threads), torch {torch.__version__}, median of interleaved runs",
        "",
        "| tokens | plain HF eager forward (s) | minilm attend (s) | ratio | scratch attend (s) | ratio |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for n, r, m, s in rows:
        lines.append(f"| {n} | {r:.4f} | {m:.4f} | {m / r:.2f}x | {s:.4f} | {s / r:.2f}x |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")


if __name__ == "__main__":
    main()
