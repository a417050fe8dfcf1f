"""Watch attention being learned: tiny causal models trained live from the project's own
attention (attnviz/scratch.py), with snapshots of every head on a fixed probe input.

    import attnviz.training
    run = attnviz.training.train(task="induction", steps=1500, seed=0, layers=2, heads=2, d_model=64)
    run.snapshots    # [(step, loss, accuracy, Attention on the probe), ...]
    run.scores       # "previous" / "induction" / "diagonal" -> (snapshots, layers, heads)
    run.model        # a Runner: run.model.attend("t03 t17 t03 ...")
"""

from __future__ import annotations

from typing import Any, Literal, overload

from .digits import DigitsRun, DigitsSnapshot, train_digits
from .loop import LIMITS, Snapshot, TrainConfig, TrainingRun, prepare, resume
from .loop import train as _train_decoder
from .model import DecoderConfig, TinyDecoder
from .runner import TrainedModel, build_tokenizer
from .scores import SCORES, induction_cols, pattern_score, previous_cols, score_attention
from .seq2seq import Seq2SeqRun, Seq2SeqSnapshot, train_seq2seq
from .seq2seq_tasks import SEQ2SEQ_TASKS
from .tasks import TASKS, Probe, Task, make_task, symbol

__all__ = [
    "LIMITS",
    "SCORES",
    "SEQ2SEQ_TASKS",
    "TASKS",
    "DecoderConfig",
    "DigitsRun",
    "DigitsSnapshot",
    "Probe",
    "Seq2SeqRun",
    "Seq2SeqSnapshot",
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
    "train_digits",
    "train_seq2seq",
]


@overload
def train(*args: Any, task: Literal["digits"], **kwargs: Any) -> DigitsRun: ...
@overload
def train(*args: Any, arch: Literal["seq2seq"], **kwargs: Any) -> Seq2SeqRun: ...
@overload
def train(*args: Any, arch: Literal["decoder"] = "decoder", **kwargs: Any) -> TrainingRun: ...
def train(*args: Any, arch: str = "decoder", **kwargs: Any) -> TrainingRun | Seq2SeqRun | DigitsRun:
    """loop.train (a tiny decoder), or with arch="seq2seq" an encoder-decoder on copy, reverse,
    sort or date (seq2seq.train_seq2seq: snapshots with encoder, decoder and cross-attention), or
    with task="digits" a tiny ViT on the 8 x 8 digits (digits.train_digits)."""
    if kwargs.get("task") == "digits":
        del kwargs["task"]
        return train_digits(*args, **kwargs)
    if arch == "seq2seq":
        return train_seq2seq(*args, **kwargs)
    if arch != "decoder":
        raise ValueError(f"unknown arch {arch!r}: choose decoder or seq2seq")
    return _train_decoder(*args, **kwargs)
