"""The faithfulness scoreboard: for one output (a token's final vector, or the sentence embedding
for query=None), which picture of "where information comes from" tracks what the model does when
ordinary input tokens are removed (special tokens never are)? Per method:
- rank agreement (Spearman, Kendall) with leave-one-out (removal.py), the reference ranking;
- a deletion curve, most important first, at fractions 0, 10%, ..., 100% of the ordinary tokens;
  its mean is the AOPC (Samek et al. 2017; "comprehensiveness" in DeYoung et al. 2020),
  1/(L+1) sum_{k=0..L} (f(x) - f(x_k)), k = 0 included; random orders give the floor;
- for the whole-layer methods, the same agreement at each layer's output (the map through
  layer l, and layer l's own map).
The metrics are debated: masked text is out of distribution (Hooker et al. 2019) and AOPC is not
comparable across models or inputs (Edin et al. 2024, arXiv 2408.08137).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ..models import Encoded, Progress, Runner
from .agreement import kendall_tau, spearman_rho
from .context_mixing import METHODS, contributions_all
from .removal import gradient_scores, removal_effects
from .removal_lm import LmTarget, is_lm, lm_gradient_scores, lm_removal_effects, scored_encoding

SCOREBOARD_METHODS = ("attention_last", *METHODS, "gradient")  # "attention" is attention rollout
FAITHFULNESS_MAX_TOKENS = 128  # leave-one-out is n passes and Value Zeroing grows as n^3: beyond, cut with a note
CUT_NOTE = "scored on the first {kept} of {total} tokens"
_FORWARD_SHARE = 0.6  # progress: the masked passes are about this share of the work, contributions the rest


@dataclass(frozen=True, eq=False)
class ScoreRow:
    """One method's line. scores (n,) (NaN for the random floor); curve (steps + 1,) the output
    change after removing `Scoreboard.removed[k]` tokens, curve[0] = 0; aopc = curve.mean();
    layer_rolled / layer_single (L,) Spearman with leave-one-out at each layer (whole-layer
    methods only)."""

    method: str
    spearman: float
    kendall: float
    aopc: float
    curve: np.ndarray
    scores: np.ndarray
    layer_rolled: np.ndarray | None = None
    layer_single: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class Scoreboard:
    """The table (one row a method, the random floor last) and what it was measured on."""

    tokens: list[str]
    special: np.ndarray
    query: int | None
    model: str
    rows: tuple[ScoreRow, ...]
    removed: np.ndarray  # (steps + 1,) tokens removed at each point of the curves
    loo: np.ndarray  # (n,) leave-one-out effect on the output (0 for special tokens)
    loo_layers: np.ndarray  # (L, n) the same at each layer's output
    random_aopc_std: float
    truncated: bool = False
    n_input_tokens: int = 0
    notes: tuple[str, ...] = ()
    output: str = "cosine distance"  # what loo and the curves measure: "log-probability drop" for a decoder
    target: str = ""  # a decoder's target: the next token or the continuation scored

    def row(self, method: str) -> ScoreRow:
        return next(r for r in self.rows if r.method == method)

    @property
    def methods(self) -> list[str]:
        return [r.method for r in self.rows if r.method != "random"]

    @property
    def fractions(self) -> np.ndarray:
        """(steps + 1,) share of the ordinary tokens removed at each point of the curves."""
        return self.removed / max(int(self.removed[-1]), 1)

    @property
    def best(self) -> str:
        return self.leaders[0]

    @property
    def leaders(self) -> list[str]:
        """Every method whose AOPC equals the largest within 1e-9 (short texts often tie)."""
        top = max(self.row(m).aopc for m in self.methods)
        return [m for m in self.methods if self.row(m).aopc >= top - 1e-9]

    @property
    def best_by_rank(self) -> str | None:
        """The method whose ranking agrees best with leave-one-out (None if none is defined)."""
        defined = [m for m in self.methods if not math.isnan(self.row(m).spearman)]
        return max(defined, key=lambda m: self.row(m).spearman) if defined else None

    def table(self) -> list[dict[str, float | str]]:
        """One dict a row: method, spearman, kendall, aopc, and aopc over the random floor."""
        floor = self.row("random").aopc
        return [
            {
                "method": r.method,
                "spearman": r.spearman,
                "kendall": r.kendall,
                "aopc": r.aopc,
                "aopc_over_random": r.aopc - floor,
            }
            for r in self.rows
        ]


def _order(scores: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Ordinary token indices, highest score first (ties: earlier position first)."""
    idx = np.flatnonzero(keep)
    return idx[np.argsort(-scores[idx], kind="stable")]


def _steps(k: int, steps: int) -> np.ndarray:
    """Tokens removed at each point: 0 ... k in `steps` near-equal strides (every count if k <= steps)."""
    return np.unique(np.round(np.linspace(0, k, min(k, steps) + 1)).astype(int))


def _method_scores(
    model: Runner,
    enc: Encoded,
    query: int | None,
    methods: list[str],
    cap: int,
    progress: Progress | None,
    target: LmTarget | None = None,
    extra: Mapping[str, np.ndarray] | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, tuple[np.ndarray, np.ndarray]], tuple[str, ...]]:
    """Each method's (n,) token scores, then `extra`'s (the caller's own); the whole-layer
    methods' (L, n) rolled and own-layer rows; the methods' notes."""
    wanted = [m for m in METHODS if m in methods or (m == "attention" and "attention_last" in methods)]
    tokens: dict[str, np.ndarray] = {}
    layers: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    notes: tuple[str, ...] = ()
    if wanted:
        found = contributions_all(model, enc.text, wanted, max_tokens=cap, progress=progress)

        def rows(m: np.ndarray) -> np.ndarray:  # (..., n, n) -> (..., n): the output's row
            if target is not None:  # a decoder: the rows that predict the target
                return m[..., target.positions, :].mean(axis=-2)
            return m.mean(axis=-2) if query is None else m[..., query, :]

        for method, c in found.items():
            if c.n != len(enc.tokens):
                raise ValueError(f"{method} saw {c.n} tokens, the scoreboard {len(enc.tokens)}")
            if method in methods:
                tokens[method] = rows(c.rolled).astype(np.float64)
                layers[method] = (rows(c.rolled_layers), rows(c.per_layer))
            notes += c.notes
        if "attention_last" in methods:
            tokens["attention_last"] = rows(found["attention"].per_layer[-1]).astype(np.float64)
    if "gradient" in methods:
        scores = gradient_scores(model, enc, query) if target is None else lm_gradient_scores(model, enc, target)
        tokens["gradient"] = scores
    for name, values in (extra or {}).items():
        tokens[name] = np.asarray(values, dtype=np.float64).reshape(-1)
        if tokens[name].shape != (len(enc.tokens),):
            raise ValueError(f"extra scores {name!r} have {tokens[name].size} values for {len(enc.tokens)} tokens")
    return tokens, layers, notes


def _checked(
    methods: Iterable[str], lm: bool, extra: Mapping[str, np.ndarray] | None, n_steps: int, orders: int
) -> list[str]:
    if lm and methods is SCOREBOARD_METHODS:  # GlobEnc is defined for post-LN encoders: not a decoder's default
        methods = [m for m in SCOREBOARD_METHODS if m != "globenc"]
    chosen = list(dict.fromkeys(methods))
    unknown = [m for m in chosen if m not in SCOREBOARD_METHODS]
    if unknown or not (chosen or extra):
        raise ValueError(f"unknown method {unknown[:1]}; choose from {', '.join(SCOREBOARD_METHODS)}")
    clash = [m for m in extra or {} if m in (*SCOREBOARD_METHODS, "random")]
    if clash:
        raise ValueError(f"extra scores may not reuse the name {clash[0]!r}")
    if n_steps < 1 or orders < 1:
        raise ValueError("steps and random_orders must be at least 1")
    return chosen


def faithfulness(
    model: Runner,
    text: str,
    query: int | None = None,
    *,
    methods: Iterable[str] = SCOREBOARD_METHODS,
    extra: Mapping[str, np.ndarray] | None = None,
    max_tokens: int | None = FAITHFULNESS_MAX_TOKENS,
    steps: int = 10,
    random_orders: int = 4,
    seed: int = 0,
    progress: Progress | None = None,
    continuation: str | None = None,
) -> Scoreboard:
    """Score each method ("attention_last" the last layer's raw attention, "attention" its
    rollout, "gradient" |input x gradient|) against leave-one-out and deletion, for token
    `query`'s final vector or (None) the sentence embedding. A causal LM is scored on a
    log-probability (removal_lm.py), maps read at the rows that predict it, GlobEnc left out.
    extra: your own token scores {name: (n,)}, ranked alongside. The text is cut to
    `max_tokens` (None: the model's limit) with a note."""
    lm = is_lm(model)
    chosen = _checked(methods, lm, extra, steps, random_orders)
    cap = model.max_tokens if max_tokens is None else max_tokens
    enc, target = scored_encoding(model, text, query, continuation, cap, lm)
    n = len(enc.tokens)
    first = None if progress is None else (lambda f: progress(f * (1 - _FORWARD_SHARE)))
    scores, layer_rows, notes = _method_scores(model, enc, query, chosen, cap, first, target, extra)
    names = [*chosen, *(extra or {})]
    keep = ~enc.special
    keep[n if target is None else target.start :] = False  # a continuation is never removed
    removed = _steps(int(keep.sum()), steps)
    rng = np.random.default_rng(seed)
    randoms = [rng.permutation(np.flatnonzero(keep)) for _ in range(random_orders)]
    masks, where = _masks(n, keep, [*(_order(scores[m], keep) for m in names), *randoms], removed)
    rest = None if progress is None else (lambda f: progress(1 - _FORWARD_SHARE + f * _FORWARD_SHARE))
    loo_layers, loo, output = _effects(model, enc, masks, keep, query, target, rest)
    curves = np.concatenate([np.zeros((len(where), 1)), output[where]], axis=1)  # (orders, steps + 1)
    rows = [_row(m, scores[m], curves[k], loo, loo_layers, keep, layer_rows.get(m)) for k, m in enumerate(names)]
    floor = curves[len(names) :]
    cut = (CUT_NOTE.format(kept=n, total=enc.n_input_tokens),) if enc.truncated else ()
    rows.append(ScoreRow("random", math.nan, math.nan, float(floor.mean()), floor.mean(0), np.full(n, np.nan)))
    return Scoreboard(
        tokens=enc.tokens,
        special=enc.special,
        query=query,
        model=model.name,
        rows=tuple(rows),
        removed=removed,
        loo=loo,
        loo_layers=loo_layers,
        random_aopc_std=float(floor.mean(axis=1).std()),
        truncated=enc.truncated,
        n_input_tokens=enc.n_input_tokens,
        notes=cut + tuple(dict.fromkeys(notes)),
        output="cosine distance" if target is None else "log-probability drop",
        target="" if target is None else target.text,
    )


def _effects(
    model: Runner,
    enc: Encoded,
    masks: np.ndarray,
    keep: np.ndarray,
    query: int | None,
    target: LmTarget | None,
    rest: Progress | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leave-one-out at each layer (L, n) and on the output (n,) (0 where a token is kept),
    and the output's change for every mask (B,): the first masks remove one token each."""
    if target is None:
        layer_effects = removal_effects(model, enc, masks, query, progress=rest)  # (B, L)
        output = layer_effects[:, -1]
    else:
        layer_effects, output = lm_removal_effects(model, enc, masks, target, progress=rest)
    k, n = int(keep.sum()), keep.shape[0]
    loo_layers, loo = np.zeros((model.n_layers, n)), np.zeros(n)
    loo_layers[:, keep], loo[keep] = layer_effects[:k].T, output[:k]
    return loo_layers, loo, output


def _masks(n: int, keep: np.ndarray, orders: list[np.ndarray], removed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct masks (B, n): each ordinary token alone first (leave-one-out), then every
    order's prefixes at each step k > 0; and the row of each step's mask (orders, steps)."""
    rows = list(np.eye(n, dtype=bool)[keep])
    index = {m.tobytes(): i for i, m in enumerate(rows)}
    where = np.zeros((len(orders), len(removed) - 1), dtype=int)
    for o, order in enumerate(orders):
        for s, k in enumerate(removed[1:]):
            m = np.zeros(n, dtype=bool)
            m[order[:k]] = True
            where[o, s] = index.setdefault(m.tobytes(), len(rows))
            if where[o, s] == len(rows):  # a new mask
                rows.append(m)
    return np.array(rows, dtype=bool).reshape(-1, n), where


def _row(
    method: str,
    scores: np.ndarray,
    curve: np.ndarray,
    loo: np.ndarray,
    loo_layers: np.ndarray,
    keep: np.ndarray,
    layer_rows: tuple[np.ndarray, np.ndarray] | None,
) -> ScoreRow:

    def rho(a: np.ndarray, b: np.ndarray) -> float:
        return spearman_rho(a[keep], b[keep])

    per_layer = [np.array([rho(m[layer], at) for layer, at in enumerate(loo_layers)]) for m in layer_rows or ()]
    rolled, single = per_layer or (None, None)
    return ScoreRow(
        method=method,
        spearman=rho(scores, loo),
        kendall=kendall_tau(scores[keep], loo[keep]),
        aopc=float(curve.mean()),
        curve=curve,
        scores=scores,
        layer_rolled=rolled,
        layer_single=single,
    )
