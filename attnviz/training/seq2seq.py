"""Train a tiny encoder-decoder live and watch its cross-attention find the alignment.

The alignment score of a head is the mean cross-attention weight, over the target tokens that
copy a source token, on the source position(s) that token copies (seq2seq_tasks.py says which);
a snapshot's `alignment` is its best head's. Exact match: the share of held-out sources whose
whole target the model writes right, decoding greedily. Seeded and chunked as loop.py.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch

from ..models import Progress
from ..result import Attention
from .loop import RunState, check_shared, drive, scored, torch_threads
from .seq2seq_model import Maps, Seq2Seq, Seq2SeqConfig
from .seq2seq_tasks import PairBatch, PairTask, make_pair_task

LIMITS = {"steps": (1, 20_000), "heads": (1, 8), "d_model": (8, 256), "enc_layers": (1, 4), "dec_layers": (1, 4)}
HELD_OUT = 128  # held-out sources exact match and alignment are measured on
MAX_SNAPSHOTS = 30


class Seq2SeqSnapshot(NamedTuple):
    step: int
    loss: float  # held-out, teacher forced
    accuracy: float  # held-out, share of target tokens right (teacher forced)
    exact: float  # held-out, share of targets written entirely right (greedy decoding)
    alignment: float  # the best cross-attention head's alignment score
    encoder: Attention  # the probe source's encoder self-attention (layers, heads, S, S)
    decoder: Attention  # the decoder's causal self-attention on <s> y1 .. y(T-1)
    cross: Attention  # output tokens over input tokens (layers, heads, T, S)
    heads: np.ndarray  # (decoder layers, heads): each cross-attention head's alignment score
    seconds: float  # training time so far, snapshots included


@dataclass(frozen=True)
class Seq2SeqTrainConfig:
    task: str = "reverse"
    steps: int = 200
    seed: int = 0
    d_model: int = 64
    heads: int = 2
    enc_layers: int = 1
    dec_layers: int = 1
    lr: float = 3e-3
    batch_size: int = 64
    symbols: int = 32
    length: int = 8
    snapshot_every: int = 0  # 0: about MAX_SNAPSHOTS over the run

    def check(self) -> None:
        check_shared(self, LIMITS | {"batch_size": (1, 1024)})

    @property
    def every(self) -> int:
        return self.snapshot_every or max(1, math.ceil(self.steps / MAX_SNAPSHOTS))


class Translation(NamedTuple):
    source: list[str]
    output: list[str]
    cross: Attention  # the model's own output over the source


@dataclass
class Seq2SeqRun(RunState):
    config: Seq2SeqTrainConfig
    task: PairTask
    model: Seq2Seq
    probe: tuple[np.ndarray, np.ndarray]  # (source (S,), target (T,)) ids
    snapshots: list[Seq2SeqSnapshot] = field(default_factory=list)

    @property
    def steps(self) -> np.ndarray:
        return np.array([s.step for s in self.snapshots], dtype=np.int64)

    @property
    def alignment(self) -> np.ndarray:
        return np.array([s.alignment for s in self.snapshots])

    @property
    def exact(self) -> np.ndarray:
        return np.array([s.exact for s in self.snapshots])

    def translate(self, text: str) -> Translation:
        """The trained model on a source typed as text ("t03 t17 ...", "3 May 2026"), decoded
        greedily; ValueError naming what the task cannot read."""
        src = torch.as_tensor([self.task.parse(text)], dtype=torch.long)
        with torch.inference_mode():
            out, maps = self.model.generate(src, self.task.tgt_len)
        source, output = self.task.tokens(src[0].tolist()), self.task.tokens(out[0].tolist())
        return Translation(source, output, _cross(self, maps, output, source))


def alignment_scores(cross: np.ndarray, align: np.ndarray) -> np.ndarray:
    """cross (B, H, T, S) weights, align (B, T, S) bool -> (H,): the mean weight on the aligned
    source positions over the target rows that copy something (NaN when none does)."""
    scored = np.asarray(align.any(axis=-1))  # (B, T)
    on = (cross * align[:, None]).sum(-1)  # (B, H, T)
    count = int(scored.sum())
    return (on * scored[:, None]).sum((0, 2)) / count if count else np.full(cross.shape[1], np.nan)


def train_seq2seq(
    task: str = "reverse",
    steps: int = 200,
    seed: int = 0,
    *,
    progress: Progress | None = None,
    on_snapshot: Callable[[Seq2SeqRun], None] | None = None,
    threads: int | None = 1,
    **options: object,
) -> Seq2SeqRun:
    """Train an encoder-decoder on `task` (copy, reverse, sort, date), to the last step or until
    `progress` raises Cancelled. `options`: the other `Seq2SeqTrainConfig` fields. ValueError for
    arguments out of range."""
    cfg = Seq2SeqTrainConfig(task, steps, seed, **options)  # type: ignore[arg-type]
    cfg.check()
    pairs = make_pair_task(cfg.task, symbols=cfg.symbols, length=cfg.length)
    mcfg = Seq2SeqConfig(len(pairs.vocab), pairs.src_len, pairs.tgt_len, cfg.d_model, cfg.heads, cfg.enc_layers, cfg.dec_layers)  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        model = Seq2Seq(mcfg)
    src, tgt, _ = pairs.examples(1, np.random.default_rng([cfg.seed, 7]))
    run = Seq2SeqRun(cfg, pairs, model, (src[0], tgt[0]))
    held_out = pairs.batch(HELD_OUT, np.random.default_rng([cfg.seed, 2]))

    def loss(rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        batch = pairs.batch(cfg.batch_size, rng)
        logits, _ = model(batch.src, batch.dec_in)
        return scored(logits, batch.tgt)

    with torch_threads(threads):
        drive(run, model, progress, loss, lambda: _snapshot(run, held_out, on_snapshot))
    return run


def _snapshot(run: Seq2SeqRun, held: PairBatch, on_snapshot: Callable[[Seq2SeqRun], None] | None) -> None:
    model = run.model
    with torch.no_grad():  # in the background lane: loop.drive takes every snapshot there
        logits, maps = model(held.src, held.dec_in)
        loss, accuracy = (float(v) for v in scored(logits, held.tgt))
        out, _ = model.generate(held.src, run.task.tgt_len)
        exact = float((out == held.tgt).all(1).float().mean())
        heads = np.stack([alignment_scores(w.numpy(), held.align) for w in maps.cross])  # (L, H)
        src, tgt = run.probe
        dec_in = np.concatenate([[2], tgt[:-1]])
        _, probe_maps = model(torch.as_tensor(src)[None], torch.as_tensor(dec_in)[None])
    source, target = run.task.tokens(src), run.task.tokens(tgt)
    enc = Attention(tokens=source, weights=_stack(probe_maps.encoder), model=_name(run))
    dec = Attention(tokens=run.task.tokens(dec_in), weights=_stack(probe_maps.decoder), model=_name(run), causal=True, special=np.arange(len(tgt)) == 0)  # fmt: skip
    cross = _cross(run, probe_maps, target, source)
    best = float(np.nanmax(heads)) if np.isfinite(heads).any() else float("nan")
    seconds = run.seconds + time.perf_counter() - run._started
    run.snapshots.append(Seq2SeqSnapshot(run.step, loss, accuracy, exact, best, enc, dec, cross, heads, seconds))
    if on_snapshot is not None:
        on_snapshot(run)


def _stack(maps: list[torch.Tensor]) -> np.ndarray:
    return torch.stack([m[0] for m in maps]).float().numpy()  # (L, H, n_q, n_k)


def _cross(run: Seq2SeqRun, maps: Maps, output: list[str], source: list[str]) -> Attention:
    return Attention(tokens=output, weights=_stack(maps.cross), model=_name(run), key_tokens=tuple(source))


def _name(run: Seq2SeqRun) -> str:
    c = run.config
    return f"trained seq2seq {c.task} {c.enc_layers}+{c.dec_layers}x{c.heads} d{c.d_model} seed {c.seed}"
