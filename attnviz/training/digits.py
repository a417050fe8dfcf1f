"""A tiny Vision Transformer trained live on the 8 x 8 handwritten digits (1,797 images bundled in
training/data/digits.csv.gz), built on the project's own attention (Dosovitskiy et al. 2021, at toy
size): 16 row-major patches of 2 x 2 pixels ("p0" top-left) projected to d_model, a learned class
token in front, learned positions, pre-LN blocks; the class token's final state is classified.
"""

from __future__ import annotations

import gzip
import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ..result import Attention
from .loop import Snapshot, torch_threads
from .model import PreNormBlock, check_heads

PATCH = 2  # 2 x 2 pixels a patch: 16 patches of an 8 x 8 image
GRID = 8 // PATCH  # patches a side
N_PATCHES = GRID * GRID
HELD_OUT = 0.2  # share of the images kept out of training (a fixed split, the same for every seed)
SPLIT_SEED = 0
DIGITS_LIMITS = {"steps": (1, 5000), "layers": (1, 4), "heads": (1, 8), "d_model": (8, 256), "snapshots": (1, 60)}


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """(images (1797, 64) float32 in 0..16, labels (1797,) int64 in 0..9) from the bundled file."""
    raw = resources.files("attnviz.training").joinpath("data/digits.csv.gz").read_bytes()
    table = np.loadtxt(io.StringIO(gzip.decompress(raw).decode("ascii")), delimiter=",", dtype=np.int64)
    return table[:, :64].astype(np.float32), table[:, 64]


def held_out_split(n: int = 1797, share: float = HELD_OUT) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, held-out indices): a fixed seeded permutation, independent of the run's seed."""
    order = np.random.default_rng(SPLIT_SEED).permutation(n)
    cut = round(n * share)
    return np.sort(order[cut:]), np.sort(order[:cut])


def patches(images: torch.Tensor) -> torch.Tensor:
    """(B, 64) pixels in 0..16 -> (B, 16, 4): row-major 2 x 2 patches, pixels scaled to 0..1."""
    x = images.reshape(-1, GRID, PATCH, GRID, PATCH) / 16.0
    return x.permute(0, 1, 3, 2, 4).reshape(-1, N_PATCHES, PATCH * PATCH)


def digit_tokens() -> list[str]:
    return ["[CLS]"] + [f"p{i}" for i in range(N_PATCHES)]


@dataclass(frozen=True)
class ViTConfig:
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4

    def __post_init__(self) -> None:
        check_heads(self.d_model, self.n_heads)


class TinyViT(nn.Module):
    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.cfg = cfg
        self.patch_embed = nn.Linear(PATCH * PATCH, cfg.d_model)
        self.cls = nn.Parameter(torch.zeros(1, 1, cfg.d_model))
        self.positions = nn.Parameter(torch.randn(1, N_PATCHES + 1, cfg.d_model) * 0.02)
        self.blocks = nn.ModuleList(PreNormBlock(cfg.d_model, cfg.n_heads, 2) for _ in range(cfg.n_layers))
        self.ln_final = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, 10)  # the ten digits

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """images (B, 64) in 0..16 -> (logits (B, 10), one (B, nh, 17, 17) weight tensor a layer)."""
        x = self.patch_embed(patches(images))
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.positions
        maps = []
        for block in self.blocks:
            x, weights = block(x)
            maps.append(weights)
        return self.head(self.ln_final(x[:, 0])), maps


# loop.Snapshot: the step, the held-out images' mean cross-entropy and share classified right, the probe digit's maps
DigitsSnapshot = Snapshot


@dataclass
class DigitsRun:
    config: ViTConfig
    model: TinyViT
    probe: int  # index into the held-out images of the digit the snapshots show
    images: np.ndarray  # the held-out images (N, 64), 0..16
    labels: np.ndarray  # their labels (N,)
    snapshots: list[DigitsSnapshot] = field(default_factory=list)
    states: list[dict[str, torch.Tensor]] = field(default_factory=list)  # the weights at each snapshot
    predictions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # final, held-out
    seconds: float = 0.0  # wall time of the training loop

    @property
    def accuracy(self) -> float:
        return self.snapshots[-1].accuracy if self.snapshots else 0.0

    @property
    def misclassified(self) -> np.ndarray:
        """Held-out indices the final model gets wrong."""
        return np.flatnonzero(self.predictions != self.labels)

    def attention(self, index: int, snapshot: int = -1) -> Attention:
        """Held-out image `index` through the weights of snapshot `snapshot`."""
        model = TinyViT(self.config).eval()
        model.load_state_dict(self.states[snapshot])
        return _attend(model, self, index)


def _attend(model: TinyViT, run: DigitsRun, index: int) -> Attention:
    with torch.no_grad():
        _, maps = model(torch.as_tensor(run.images[index], dtype=torch.float32)[None])
    weights = torch.stack([m[0] for m in maps]).numpy().astype(np.float32)  # (L, nh, 17, 17)
    special = np.arange(N_PATCHES + 1) == 0  # [CLS]
    text = f"digit {int(run.labels[index])}"
    return Attention(tokens=digit_tokens(), weights=weights, model="digits-vit", special=special, text=text)


def train_digits(
    steps: int = 400,
    seed: int = 0,
    *,
    layers: int = 2,
    heads: int = 4,
    d_model: int = 64,
    batch_size: int = 128,
    lr: float = 3e-3,
    snapshots: int = 10,
    probe: int = 0,
    threads: int | None = 1,
    progress: Callable[[int, int], object] | None = None,
) -> DigitsRun:
    """Train a TinyViT for `steps` AdamW steps (seeded), `snapshots` evenly spaced snapshots of the
    held-out accuracy and of the probe digit's maps; progress(step, steps) after each snapshot."""
    given = {"steps": steps, "layers": layers, "heads": heads, "d_model": d_model, "snapshots": snapshots}
    for name, value in given.items():
        low, high = DIGITS_LIMITS[name]
        if not low <= value <= high:
            raise ValueError(f"{name} must be between {low} and {high} (got {value})")
    images, labels = load_digits()
    train_idx, test_idx = held_out_split(len(labels))
    if not 0 <= probe < len(test_idx):
        raise ValueError(f"probe must be a held-out index between 0 and {len(test_idx) - 1}")
    x_train, y_train = torch.as_tensor(images[train_idx]), torch.as_tensor(labels[train_idx])
    x_test, y_test = torch.as_tensor(images[test_idx]), torch.as_tensor(labels[test_idx])
    started = time.perf_counter()
    with torch_threads(threads):
        torch.manual_seed(seed)
        cfg = ViTConfig(d_model=d_model, n_layers=layers, n_heads=heads)
        run = DigitsRun(cfg, TinyViT(cfg), probe, images[test_idx], labels[test_idx])
        opt = torch.optim.AdamW(run.model.parameters(), lr=lr, weight_decay=0.01)
        schedule = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
        marks = set(np.unique(np.linspace(0, steps, snapshots + 1).round().astype(int)[1:]).tolist())
        generator = torch.Generator().manual_seed(seed)
        for step in range(1, steps + 1):
            batch = torch.randint(len(y_train), (batch_size,), generator=generator)
            logits, _ = run.model(x_train[batch])
            loss = F.cross_entropy(logits, y_train[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
            schedule.step()
            if step in marks:
                _snapshot(run, step, x_test, y_test)
                run.seconds = time.perf_counter() - started
                if progress is not None:
                    progress(step, steps)
    return run


def _snapshot(run: DigitsRun, step: int, x_test: torch.Tensor, y_test: torch.Tensor) -> None:
    """Held-out loss, accuracy and predictions, the weights, and the probe digit's maps (no dropout
    anywhere: train and eval modes compute the same function)."""
    with torch.no_grad():
        logits, _ = run.model(x_test)
    predictions = logits.argmax(-1)
    run.predictions = predictions.numpy()
    accuracy = float((predictions == y_test).float().mean())
    run.states.append({k: v.detach().clone() for k, v in run.model.state_dict().items()})
    loss = float(F.cross_entropy(logits, y_test))
    run.snapshots.append(DigitsSnapshot(step, loss, accuracy, _attend(run.model, run, run.probe)))
