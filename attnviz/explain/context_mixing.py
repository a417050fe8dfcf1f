"""Whole-layer context mixing, one entry point for the app, the command line and notebooks:
`contributions(model, text, method)`, its per_layer (L, n, n) (row i: where position i's output
at that layer comes from) and rolled (n, n) (the same traced back to the input tokens); the rows
of both are non-negative and sum to 1.

    "attention"      mean over heads of the weights; rolled = attention rollout (Abnar & Zuidema 2020)
    "norm"           ||sum_h alpha f_h(x_j)|| (Kobayashi et al. 2020); rolled like attention
    "globenc"        attention, residual and both LayerNorms (Modarressi et al. 2022)
    "alti"           attention, residual and LayerNorm, L1 distances (Ferrando et al. 2022)
    "value_zeroing"  rerun each layer with one token's values zeroed (Mohebbi et al. 2023)

The last three count the residual, so they roll out as a plain product of the layers' maps, as
the authors' code does: GlobEnc multiplies the raw norms and normalises rows after
(mohsenfayyaz/GlobEnc src/attention_rollout.py; `globenc_rollout="normalised_layers"` normalises
each layer first), ALTI and Value Zeroing normalise each layer first (mt-upc/transformer-
contributions src/utils_contributions.py; hmohebbi/ValueZeroing demo.py, `res=False`). A row
with nothing to share out becomes its own one-hot row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..models import Encoded, Progress, Runner
from .decompose import alti_map, globenc_map, norm_map, record_layers
from .prenorm import (
    PRENORM_METHODS,
    alti_prenorm_map,
    is_prenorm,
    record_prenorm_layers,
    value_zeroing_prenorm_map,
)
from .rollout import rollout_layers
from .value_zeroing import value_zeroing_map

METHODS = ("attention", "norm", "globenc", "alti", "value_zeroing")
# GlobEnc's rollout: "raw" (the authors': rows normalised after the product) or "normalised_layers".
GLOBENC_ROLLOUTS = ("raw", "normalised_layers")
# Value Zeroing runs the feed-forward on n x n vectors per layer (n^3): without an explicit
# max_tokens it sees at most this many tokens, with a note.
VALUE_ZEROING_MAX_TOKENS = 128
CUT_NOTE = "value zeroing ran on the first {kept} of {total} tokens (pass max_tokens to go further)"


@dataclass(frozen=True, eq=False)
class Contributions:
    """Where each position's output comes from, by one method, for one text.

    per_layer:      float32 (L, n, n); [l, i, j] = share of layer l's output at i from input j.
    rolled_layers:  float32 (L, n, n); the maps traced back to the input tokens through layer l.
    """

    method: str
    tokens: list[str]
    per_layer: np.ndarray
    rolled_layers: np.ndarray
    special: np.ndarray
    model: str = ""
    truncated: bool = False
    n_input_tokens: int = 0
    notes: tuple[str, ...] = ()

    @property
    def rolled(self) -> np.ndarray:
        """float32 (n, n): row i = how much of the final output at i traces back to input token j."""
        return self.rolled_layers[-1]

    @property
    def n(self) -> int:
        return int(self.per_layer.shape[-1])

    @property
    def n_layers(self) -> int:
        return int(self.per_layer.shape[0])


def normalise_rows(m: np.ndarray) -> np.ndarray:
    """Rows scaled to sum to 1 (float32); a row that sums to 0 becomes its own one-hot row."""
    m = np.maximum(np.asarray(m, dtype=np.float64), 0.0)
    sums = m.sum(-1, keepdims=True)
    return np.where(sums > 0, m / np.where(sums > 0, sums, 1.0), np.eye(m.shape[-1])).astype(np.float32)


def roll_out(per_layer: np.ndarray, residual: bool) -> np.ndarray:
    """Rollout after each layer, (L, n, n) float32: R_0 = M_0, R_l = M_l R_{l-1}. With
    `residual`, each M_l is first averaged with the identity (Abnar & Zuidema 2020)."""
    m = torch.from_numpy(np.ascontiguousarray(per_layer, dtype=np.float64))
    if residual:
        m = 0.5 * m + 0.5 * torch.eye(m.shape[-1], dtype=m.dtype)
    out = m.clone()
    for k in range(1, out.shape[0]):
        out[k] = m[k] @ out[k - 1]
    return out.numpy().astype(np.float32)


def roll_out_raw(raw_per_layer: np.ndarray) -> np.ndarray:
    """GlobEnc's rollout of raw maps, (L, n, n) float32: R_l = M_l R_{l-1} in float64, each R_l's
    rows then normalised. Each step is divided by its largest entry, which leaves the normalised
    rows as they are and keeps deep stacks of large norms finite."""
    m = np.asarray(raw_per_layer, dtype=np.float64)
    out = np.empty(m.shape, dtype=np.float32)
    joint = m[0]
    for k in range(m.shape[0]):
        if k:
            joint = m[k] @ joint
        top = float(joint.max(initial=0.0))
        if top > 0 and np.isfinite(top):
            joint = joint / top
        out[k] = normalise_rows(joint)
    return out


_MAPS: dict[str, Callable[[Any], torch.Tensor]] = {
    "attention": lambda r: r.alpha.mean(0),
    "norm": norm_map,
    "globenc": globenc_map,
    "alti": alti_map,
}
_PRENORM_MAPS = {**_MAPS, "alti": alti_prenorm_map}  # a decoder's alpha is 0 above the diagonal


def contributions_all(
    model: Runner,
    text: str,
    methods: Iterable[str] = METHODS,
    *,
    max_tokens: int | None = None,
    progress: Progress | None = None,
    globenc_rollout: str = "raw",
) -> dict[str, Contributions]:
    """Several methods from one recorded forward: {method: Contributions}. The text is cut to
    `max_tokens` (default: the model's limit, or VALUE_ZEROING_MAX_TOKENS with Value Zeroing,
    said in `notes`). Encoders and Llama-family decoders (PRENORM_METHODS, maps 0 above the
    diagonal); ValueError for other layouts. `progress(fraction)` may raise to cancel."""
    chosen = list(dict.fromkeys(methods))
    unknown = [m for m in chosen if m not in METHODS]
    if unknown or not chosen:
        raise ValueError(f"unknown method {unknown[0] if unknown else '(none)'!r}; choose from {', '.join(METHODS)}")
    if globenc_rollout not in GLOBENC_ROLLOUTS:
        raise ValueError(f"unknown globenc_rollout {globenc_rollout!r}; choose from {', '.join(GLOBENC_ROLLOUTS)}")
    cap = VALUE_ZEROING_MAX_TOKENS if max_tokens is None and "value_zeroing" in chosen else max_tokens
    decoder = is_prenorm(model)  # ValueError before any work for other layouts
    if decoder and set(chosen) - set(PRENORM_METHODS):
        raise ValueError(f"for a decoder choose from {', '.join(PRENORM_METHODS)} (GlobEnc is for post-LN encoders)")
    enc = model.encode(text, cap)
    notes: tuple[str, ...] = ()
    if max_tokens is None and cap is not None and enc.truncated:
        notes = (CUT_NOTE.format(kept=len(enc.tokens), total=enc.n_input_tokens),)
    maps, raw_globenc = _layer_maps(model, enc, chosen, decoder, progress, globenc_rollout == "raw")
    out = {}
    for method in chosen:
        per_layer = np.stack(maps[method])
        out[method] = Contributions(
            method=method,
            tokens=enc.tokens,
            per_layer=per_layer,
            rolled_layers=_rolled(method, per_layer, raw_globenc),
            special=enc.special,
            model=model.name,
            truncated=enc.truncated,
            n_input_tokens=enc.n_input_tokens,
            notes=notes if method == "value_zeroing" else (),
        )
    return out


def _layer_maps(
    model: Runner, enc: Encoded, chosen: list[str], decoder: bool, progress: Progress | None, raw: bool
) -> tuple[dict[str, list[np.ndarray]], list[np.ndarray]]:
    """Each method's rows-normalised map of every layer, from one recorded forward, and (with
    `raw`) GlobEnc's unnormalised norms for the authors' rollout."""
    maps: dict[str, list[np.ndarray]] = {m: [] for m in chosen}
    raw_globenc: list[np.ndarray] = []
    records: Iterable[Any] = record_prenorm_layers(model, enc) if decoder else record_layers(model, enc)
    for layer, record in enumerate(records):
        with torch.inference_mode():
            for method in chosen:
                if method == "value_zeroing":
                    step = None if progress is None else _within(progress, layer, model.n_layers)
                    zeroing = value_zeroing_prenorm_map if decoder else value_zeroing_map
                    m = zeroing(model, record, step)
                else:
                    m = (_PRENORM_MAPS if decoder else _MAPS)[method](record)
                if method == "globenc" and raw:
                    raw_globenc.append(m.float().cpu().numpy())
                maps[method].append(normalise_rows(m.double().cpu().numpy()))  # float32: smaller stacks
        if progress is not None:
            progress((layer + 1) / model.n_layers)  # closed-form maps too: ALTI at 512 tokens is slow
    return maps, raw_globenc


def _rolled(method: str, per_layer: np.ndarray, raw_globenc: list[np.ndarray]) -> np.ndarray:
    """The maps traced back to the input tokens, by `method`'s own rule (module docstring)."""
    if method == "attention":  # the project's rollout, exactly (explain.rollout)
        return rollout_layers(per_layer[:, None])
    if method == "globenc" and raw_globenc:
        return roll_out_raw(np.stack(raw_globenc))
    return roll_out(per_layer, residual=method == "norm")  # the others count the residual already


def _within(progress: Progress, k: int, total: int) -> Progress:
    """Progress of the k-th of `total` equal parts, reported as a fraction of the whole."""
    return lambda fraction: progress((k + min(max(fraction, 0.0), 1.0)) / total)


def contributions(
    model: Runner,
    text: str,
    method: str,
    *,
    max_tokens: int | None = None,
    progress: Progress | None = None,
    globenc_rollout: str = "raw",
) -> Contributions:
    """Where each position's output comes from, by `method` (one of METHODS; module docstring)."""
    return contributions_all(
        model, text, [method], max_tokens=max_tokens, progress=progress, globenc_rollout=globenc_rollout
    )[method]
