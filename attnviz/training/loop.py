"""The training loop: seeded, chunked through the background lane, snapshotted, stoppable.

Deterministic for a seed on the CPU (and a thread count): weights come from a forked, seeded torch
generator and batches from a seeded numpy generator, so nothing else in the process shifts them.
Between chunks `progress(fraction)` may raise `Cancelled`: training stops and keeps what it learned.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch
from torch.nn import functional as F

from ..lab.sparse import row_counts
from ..models import Cancelled, Progress
from ..models.gate import background_lane
from ..models.threads import torch_threads
from ..result import Attention
from .model import DecoderConfig, TinyDecoder, check_heads
from .plateau import Plateau, plateau_at, plateau_window
from .runner import TrainedModel
from .scores import pattern_score
from .tasks import IGNORE, SPECIALS, TASKS, Batch, Probe, Task, make_task

LIMITS = {"steps": (1, 100_000), "layers": (1, 8), "heads": (1, 16), "d_model": (8, 512), "batch_size": (1, 1024)}
EVAL_TOKENS = 4096  # held-out tokens (at most 128 sequences) the accuracy and head scores are measured on
CHUNK_STEPS = 10  # steps between two looks at `progress` (about 0.1 s at the default size)
MAX_SNAPSHOTS = 60  # the default snapshot spacing gives about this many


class Snapshot(NamedTuple):
    step: int
    loss: float  # on the held-out batch, scored predictions only
    accuracy: float  # share of scored predictions whose top token is right
    attention: Attention  # the probe input's maps at this step


@dataclass(frozen=True)
class TrainConfig:
    task: str = "induction"
    steps: int = 1500
    seed: int = 0
    layers: int = 2
    heads: int = 2
    d_model: int = 64
    lr: float = 2e-3  # AdamW
    batch_size: int = 64
    mlp: bool = False
    norm: bool = False  # a LayerNorm before each attention (for comparison; see model.py)
    embed_std: float = 1.0  # the embeddings' initial scale (GPT-2: 0.02; for comparison)
    symbols: int = 32
    length: int = 8  # copy / reverse source length
    periods: tuple[int, int] = (6, 14)  # induction
    block: int = 64  # text window, <s> included
    snapshot_every: int = 0  # 0: about MAX_SNAPSHOTS over the run
    plateau: bool = False  # stop once the held-out accuracy has plateaued (plateau.py; the lab's presets)
    sparse: str = ""  # "": every earlier key; else a pattern of lab/sparse.py (window, global, dilated, bigbird)
    window: int = 3  # the sparse pattern's options (attnviz.lab.sparse.sparse_mask)
    global_tokens: int = 1
    dilation: int = 2
    random_keys: int = 2

    def check(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}: choose one of {', '.join(TASKS)}")
        check_shared(self, LIMITS)
        if not (math.isfinite(self.embed_std) and self.embed_std > 0):
            raise ValueError("embed_std must be positive")
        if self.sparse:
            row_counts(1, self.sparse, window=self.window, global_tokens=self.global_tokens, dilation=self.dilation,
                       random_keys=self.random_keys)  # fmt: skip  # ValueError for a bad pattern
        if not isinstance(self.plateau, bool):
            raise ValueError("plateau must be True or False")

    @property
    def every(self) -> int:
        return self.snapshot_every or max(1, math.ceil(self.steps / MAX_SNAPSHOTS))


def check_shared(cfg: Any, limits: dict[str, tuple[int, int]]) -> None:
    """The checks a decoder's and an encoder-decoder's config share (ValueError naming the field)."""
    for name, (lo, hi) in limits.items():
        value = getattr(cfg, name)
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise ValueError(f"{name} must be a whole number from {lo} to {hi}, got {value!r}")
    check_heads(cfg.d_model, cfg.heads)
    if not (math.isfinite(cfg.lr) and 0 < cfg.lr <= 1):
        raise ValueError("lr must be in (0, 1]")
    if not isinstance(cfg.snapshot_every, int) or cfg.snapshot_every < 0:
        raise ValueError("snapshot_every must be 0 (automatic) or a positive number of steps")


@dataclass(kw_only=True)
class RunState:
    """What a run keeps while `drive` trains it (a decoder's `TrainingRun`, a `Seq2SeqRun`)."""

    history: list[tuple[int, float, float]] = field(default_factory=list)  # (step, train loss, train accuracy)
    step: int = 0
    stopped: bool = False  # stopped before the last step (progress raised Cancelled)
    plateau: Plateau | None = None  # where the run ended because the held-out accuracy plateaued
    seconds: float = 0.0  # training time, snapshots included
    waited: float = 0.0  # of `seconds`, how long chunks waited in the background lane for other work
    _rng: np.random.Generator | None = field(default=None, repr=False)  # the batches, from the seed
    _optimizer: torch.optim.Optimizer | None = field(default=None, repr=False)
    _started: float = field(default=0.0, repr=False)  # perf_counter when the current resume began


@dataclass
class TrainingRun(RunState):
    """What a run learned, as it goes: the app reads it while the loop appends."""

    config: TrainConfig
    task: Task
    probe: Probe
    model: TrainedModel
    snapshots: list[Snapshot] = field(default_factory=list)
    snapshot_scores: list[dict[str, np.ndarray]] = field(default_factory=list)  # aligned with snapshots

    @property
    def scores(self) -> dict[str, np.ndarray]:
        """name -> (snapshots, layers, heads), measured on the held-out batch."""
        rows = list(self.snapshot_scores)  # one length for every name while the loop appends
        shape = (0, self.config.layers, self.config.heads)
        return {k: np.stack([r[k] for r in rows]) if rows else np.zeros(shape) for k in self.task.pattern_names}

    def summary(self) -> dict[str, object]:
        """The final numbers: accuracy, loss and each score's best head per layer."""
        last = self.snapshots[-1]
        final = self.snapshot_scores[-1]
        best = {name: [float(np.nanmax(v[layer])) for layer in range(v.shape[0])] for name, v in final.items()}
        return {"step": last.step, "loss": last.loss, "accuracy": last.accuracy, "best_head_per_layer": best,
                "stopped": self.stopped, "plateau": None if self.plateau is None else self.plateau._asdict(),
                "seconds": round(self.seconds, 3), "config": asdict(self.config)}  # fmt: skip


def train(
    task: str = "induction",
    steps: int = 1500,
    seed: int = 0,
    layers: int = 2,
    heads: int = 2,
    d_model: int = 64,
    *,
    text: str | None = None,
    progress: Progress | None = None,
    on_snapshot: Callable[[TrainingRun], None] | None = None,
    threads: int | None = 1,
    **options: object,
) -> TrainingRun:
    """Train a tiny causal model on `task` (copy, reverse, induction, text) and keep snapshots
    of its maps on a fixed probe input. `text`: what the text task learns (any language).
    `options`: the other `TrainConfig` fields. `progress(fraction)` may raise `Cancelled` to stop;
    `on_snapshot(run)` after each snapshot; `threads`: see `resume`. ValueError out of range."""
    cfg = TrainConfig(task, steps, seed, layers, heads, d_model, **options)  # type: ignore[arg-type]
    cfg.check()
    run = prepare(cfg, text)
    return resume(run, progress=progress, on_snapshot=on_snapshot, threads=threads)


def prepare(
    cfg: TrainConfig, text: str | None = None, *, wrap: Callable[[TinyDecoder, Task, str], TrainedModel] = TrainedModel
) -> TrainingRun:
    """The task, the probe and the untrained model (weights from the seed alone). `wrap` makes
    the run's model from the decoder (the training child skips the tokenizer: child.py)."""
    task = make_task(cfg.task, text=text, symbols=cfg.symbols, length=cfg.length, periods=cfg.periods, block=cfg.block)
    dcfg = DecoderConfig(
        len(task.vocab), task.max_len, cfg.d_model, cfg.layers, cfg.heads, cfg.mlp, cfg.norm, cfg.embed_std,
        cfg.sparse, cfg.window, cfg.global_tokens, cfg.dilation, cfg.random_keys, cfg.seed,
    )  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        decoder = TinyDecoder(dcfg)
    name = f"trained {cfg.task} {cfg.layers}x{cfg.heads} d{cfg.d_model} seed {cfg.seed}"
    if cfg.sparse:
        name += f" {cfg.sparse} {cfg.window}"
    return TrainingRun(cfg, task, task.probe(cfg.seed), wrap(decoder, task, name))


def resume(
    run: TrainingRun,
    *,
    progress: Progress | None = None,
    on_snapshot: Callable[[TrainingRun], None] | None = None,
    threads: int | None = 1,
) -> TrainingRun:
    """Run the loop of a prepared run to its last step (or until `progress` raises Cancelled).
    A run stopped early continues where it stopped when resumed (same batches, same optimizer).
    `threads`: torch threads while training; one by default, since a model this small gains nothing
    from a second, which spin-waits on a busy machine (bench/results_training.md); None leaves
    torch's setting."""
    cfg, decoder = run.config, run.model.decoder
    eval_size = max(1, min(128, EVAL_TOKENS // run.task.max_len))
    held_out = run.task.batch(eval_size, np.random.default_rng([cfg.seed, 2]))

    def loss(rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        batch = run.task.batch(cfg.batch_size, rng)
        logits, _ = decoder(batch.ids)
        return scored(logits, batch.targets)

    with torch_threads(threads):
        drive(run, decoder, progress, loss, lambda: _snapshot(run, held_out, on_snapshot), cfg.plateau)
    return run


def drive(
    run: Any,
    model: torch.nn.Module,
    progress: Progress | None,
    loss: Callable[[np.random.Generator], tuple[torch.Tensor, torch.Tensor]],
    snapshot: Callable[[], None],
    plateaus: bool = False,
) -> None:
    """The loop of every trainer's run (a `RunState` with `config` and `snapshots`): AdamW and
    the batches' generator from the seed at the first call, a snapshot before the first step,
    then chunks of CHUNK_STEPS steps in the background lane, a snapshot every `config.every`
    steps, until the last step (or, with `plateaus`, a plateau); when `progress` raises
    Cancelled, a snapshot of where it stopped. `loss(rng)`: a fresh batch's (loss, accuracy)."""
    cfg = run.config
    if run._rng is None or run._optimizer is None:
        run._rng = np.random.default_rng([cfg.seed, 1])
        run._optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    run.stopped = False
    start = run._started = time.perf_counter()
    model.train()  # no dropout anywhere: train and eval modes compute the same function
    try:
        if not run.snapshots:
            with background_lane():
                snapshot()
        while run.step < cfg.steps and run.plateau is None:
            if progress is not None:
                progress(run.step / cfg.steps)
            asked = time.perf_counter()
            with background_lane(), torch.inference_mode(False), torch.enable_grad():
                run.waited += time.perf_counter() - asked  # behind other visitors' passes (the lane)
                _chunk(run, loss, snapshot, plateaus)
        if progress is not None:
            progress(1.0)
    except Cancelled:
        run.stopped = run.step < cfg.steps
        if run.snapshots[-1].step != run.step:
            with background_lane():
                snapshot()
    finally:
        run.seconds += time.perf_counter() - start
        model.eval()


def _chunk(
    run: Any,
    loss: Callable[[np.random.Generator], tuple[torch.Tensor, torch.Tensor]],
    snapshot: Callable[[], None],
    plateaus: bool,
) -> None:
    """Up to CHUNK_STEPS steps, a snapshot where one is due; ends early on a plateau."""
    cfg, opt = run.config, run._optimizer
    for _ in range(min(CHUNK_STEPS, cfg.steps - run.step)):
        value, accuracy = loss(run._rng)
        opt.zero_grad(set_to_none=True)
        value.backward()
        opt.step()
        run.step += 1
        run.history.append((run.step, float(value.detach()), float(accuracy)))
        if run.step % cfg.every == 0 or run.step == cfg.steps:
            snapshot()
            if plateaus and run.step < cfg.steps:
                points = [(s.step, s.accuracy) for s in run.snapshots]
                run.plateau = plateau_at(points, plateau_window(cfg.every))
                if run.plateau is not None:
                    return


def scored(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """logits (B, T, vocab), targets (B, T) -> (mean cross-entropy, share of right top tokens)
    over the scored predictions (target not IGNORE), for every trainer's next-token model."""
    mask = targets != IGNORE
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
    return loss, (logits.argmax(-1)[mask] == targets[mask]).float().mean()


def _snapshot(run: TrainingRun, held_out: Batch, on_snapshot: Callable[[TrainingRun], None] | None) -> None:
    """Loss, accuracy and head scores on the held-out batch; the probe's maps."""
    decoder = run.model.decoder
    with torch.no_grad():
        logits, maps = decoder(held_out.ids)
        loss, accuracy = (float(v) for v in scored(logits, held_out.targets))
        probe = torch.as_tensor(run.probe.ids)[None]
        probe_maps = torch.stack([m[0] for m in decoder(probe)[1]]).numpy().astype(np.float32)  # (L, H, n, n)
    scores = {
        name: np.stack([pattern_score(m.numpy(), held_out.patterns[name]) for m in maps])  # (L, H)
        for name in run.task.pattern_names
    }
    run.snapshot_scores.append(scores)
    ids = run.probe.ids
    tokens = [t if t.strip() else "\u2423" for t in (run.task.vocab[i] for i in ids)]  # a space shows as the open box
    special = np.array([i < len(SPECIALS) for i in ids])
    att = Attention(tokens, probe_maps, run.model.name, special=special, text=run.probe.text, causal=True)
    run.snapshots.append(Snapshot(run.step, loss, accuracy, att))
    if on_snapshot is not None:
        on_snapshot(run)
