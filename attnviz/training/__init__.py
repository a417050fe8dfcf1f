"""Watch attention being learned: tiny causal models trained live from the project's own
attention (attnviz/scratch.py), with snapshots of every head on a fixed probe input.

    import attnviz.training
    run = attnviz.training.train(task="induction", steps=1500, seed=0, layers=2, heads=2, d_model=64)
    run.snapshots    # [(step, loss, accuracy, Attention on the probe), ...]
    run.scores       # "previous" / "induction" / "diagonal" -> (snapshots, layers, heads)
    run.model        # a Runner: run.model.attend("t03 t17 t03 ...")

tasks.py   copy, reverse, induction, text: sequences, the probe, the pattern each should show
model.py   the tiny decoder (token + position embeddings, pre-LN attention blocks, causal)
scores.py  head scores: mean attention where a pattern says a row should look
loop.py    the seeded loop: chunks through the background lane, snapshots, stop and keep
runner.py  the trained model behind the Runner seam, with its own fast tokenizer
cli.py     python -m attnviz train ... (main(argv))
"""

from __future__ import annotations

from .loop import LIMITS, Snapshot, TrainConfig, TrainingRun, prepare, resume, train
from .model import DecoderConfig, TinyDecoder
from .runner import TrainedModel, build_tokenizer
from .scores import SCORES, induction_cols, pattern_score, previous_cols, score_attention
from .tasks import TASKS, Probe, Task, make_task, symbol

__all__ = [
    "LIMITS",
    "SCORES",
    "TASKS",
    "DecoderConfig",
    "Probe",
    "Snapshot",
    "Task",
    "TinyDecoder",
    "TrainConfig",
    "TrainedModel",
    "TrainingRun",
    "build_tokenizer",
    "induction_cols",
    "make_task",
    "pattern_score",
    "prepare",
    "previous_cols",
    "resume",
    "score_attention",
    "symbol",
    "train",
]
