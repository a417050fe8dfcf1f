"""Heads switched off (Michel, Levy & Neubig 2019, "Are Sixteen Heads Really Better than One?"):
a head's slice of the context before the output projection zeroed or replaced by its mean over
positions (`Runner.switch_heads`). The effect: per token, the final hidden states' cosine
distance; for an encoder, that of the mean-pooled sentence embeddings (as sentence-transformers).

Michel et al.'s estimate is I_h = |dL / d xi_h| at xi = 1, a gate xi_h per head. An encoder has
no task loss, and one smallest at the unswitched output has zero gradient there, so F(xi) is
`removal.along_output` of the pooled states; comparing its ranking with the real effect is their
section 4.2. A pre-norm decoder (Llama family) switches each query head alone, runs the whole
model per variant, takes "zero" only (a mean over positions reaches later tokens), and measures
the drop of log p(the token it predicts after the text) in nats (`removal_lm`); F is then that
log-probability, their task loss up to sign.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial

import numpy as np
import torch

from ..models import Encoded, HeadMode, Progress, Runner
from ..scratch import post_ln_layer
from ._model import expand, in_batches, this_thread, with_gradients
from .ablation_results import ORDERS, Ablation, Head, HeadImportance, Measure, Order, PruningCurve
from .agreement import agreement
from .prenorm import is_prenorm
from .removal import along_output, pool
from .removal_lm import LmTarget, _log_probs, lm_target
from .value_zeroing import cosine_distance

# head_importance and pruning_curves run one variant per head or point: longer texts are cut (`capped`).
IMPORTANCE_MAX_TOKENS = 128
CURVE_POINTS = 25  # head counts on a pruning curve, 0 and all heads included


def _heads(model: Runner, heads: Iterable[Sequence[int]]) -> tuple[Head, ...]:
    out = set()
    for pair in heads:
        layer, head = (int(v) for v in pair)
        if not (0 <= layer < model.n_layers and 0 <= head < model.n_heads):
            raise IndexError(f"head ({layer}, {head}) outside {model.n_layers} layers x {model.n_heads} heads")
        out.add((layer, head))
    return tuple(sorted(out))


def _effects(
    model: Runner, base: torch.Tensor, switched: torch.Tensor, target: LmTarget | None
) -> tuple[np.ndarray, np.ndarray]:
    """base (n, d), switched (B, n, d) -> per-token cosine distances (B, n) and the output's change
    (B,): the sentence embeddings' cosine distance, or with `target` its log-probability drop (nats)."""
    tokens = cosine_distance(switched.double(), base.double()[None])  # (B, n)
    if target is None:
        out = cosine_distance(pool(switched.double(), None), pool(base.double()[None], None))
    else:
        out = _log_probs(model, base[None], target) - _log_probs(model, switched, target)
    return tokens.cpu().numpy(), out.cpu().numpy()


def _attend_final(model: Runner, inputs: dict[str, torch.Tensor]) -> tuple[np.ndarray, torch.Tensor]:
    """One real forward: the weights (L, H, n, n) and the last LayerNorm's output (1, n, d)."""
    caught: list[torch.Tensor] = []
    handle = model.layers()[-1].ln_ff.register_forward_hook(this_thread(lambda _m, _a, out: caught.append(out)))
    try:
        weights = model.attention_array(inputs)
    finally:
        handle.remove()
    if len(caught) != 1:
        raise ValueError(f"model '{model.name}' did not run its last layer once")
    return weights, caught[0]


def ablate(
    model: Runner,
    text: str,
    heads: Iterable[Sequence[int]],
    mode: HeadMode = "zero",
    *,
    max_tokens: int | None = None,
    progress: Progress | None = None,
) -> Ablation:
    """The real model with the (layer, head) pairs switched off ("zero" or "mean") and its effect
    (module docstring). ValueError for a model neither a BERT-family encoder nor a Llama-family
    decoder."""
    decoder = _checked_mode(model, mode)
    off = _heads(model, heads)
    enc = model.encode(text, max_tokens)
    inputs, n = enc.inputs, int(enc.inputs["input_ids"].shape[1])
    target = lm_target(model, enc, None, None) if decoder else None
    with torch.inference_mode():
        for part in in_batches(model, 2, n, progress=progress):  # the base pass, then the switched one
            if part.start == 0:
                base = model.last_hidden(inputs)[0]
            if part.stop == 2:
                with model.switch_heads(off, mode):
                    if decoder:  # the final norm is not among a decoder's layer parts: two passes
                        weights, final = model.attention_array(inputs), model.last_hidden(inputs)
                    else:
                        weights, final = _attend_final(model, inputs)
        tokens, pooled = _effects(model, base, final, target)
    return Ablation(model.result(enc, weights), off, mode, tokens[0], float(pooled[0]), *_named(target))


def _named(target: LmTarget | None) -> tuple[Measure, str]:
    """The measure and the token it reads: the next token's text for a decoder."""
    return ("embedding", "") if target is None else ("next_token", target.text)


def _run_rows(
    model: Runner,
    states: list[torch.Tensor],
    mask: torch.Tensor | None,
    gates: torch.Tensor,
    starts: list[int],
    mode: HeadMode,
) -> torch.Tensor:
    """Final hidden states (R, n, d) of R switched variants. Row r switches by gates[r] (L, H)
    and joins the batch at layer starts[r] (ascending, its first switched layer) from the
    recorded input states[l] (1, n, d): the unchanged layers below are not rerun."""
    parts = model.layers()
    x = states[0][:0]  # (0, n, d)
    for layer in range(starts[0], len(parts)):
        x = torch.cat([x, states[layer].expand(starts.count(layer), -1, -1)])
        with model.switch_heads(gates=gates[: x.shape[0]], mode=mode):
            x, _ = post_ln_layer(parts[layer], x, mask)
    return x


def _sweep(
    model: Runner,
    states: list[torch.Tensor],
    inputs: dict[str, torch.Tensor],
    rows: list[list[Head]],
    mode: HeadMode,
    progress: Progress | None,
    target: LmTarget | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-token-mean distances and the output's change (sentence distance, or with `target`, a
    pre-norm decoder's, its log-probability drop; each row then runs the whole model) for each
    row's heads off; an empty row is 0 without a pass."""
    L, H, n = model.n_layers, model.n_heads, int(states[0].shape[1])
    mask = inputs.get("attention_mask")
    token_mean, sentence = np.zeros(len(rows)), np.zeros(len(rows))
    todo = sorted((min(lay for lay, _ in row), r) for r, row in enumerate(rows) if row)
    # A layer's worth of rows a batch: an interactive pass waits at most one batch.
    for part in in_batches(model, len(todo), n, progress=progress, most=H):
        chunk = todo[part]
        gates = torch.ones(len(chunk), L, H, dtype=states[0].dtype, device=states[0].device)
        for b, (_, r) in enumerate(chunk):
            for lay, hd in rows[r]:
                gates[b, lay, hd] = 0.0
        if target is None:
            final = _run_rows(model, states, mask, gates, [s for s, _ in chunk], mode)
        else:
            with model.switch_heads(gates=gates, mode=mode):
                final = model.last_hidden(expand(inputs, len(chunk)))
        tokens, pooled = _effects(model, states[-1][0], final, target)
        for b, (_, r) in enumerate(chunk):
            token_mean[r], sentence[r] = tokens[b].mean(), pooled[b]
    return token_mean, sentence


@with_gradients
def _gradient(
    model: Runner, inputs: dict[str, torch.Tensor], mode: HeadMode, target: LmTarget | None = None
) -> np.ndarray:
    """|dF/d xi| at xi = 1 (module docstring): one forward and backward pass."""
    objective = along_output(model, inputs, None) if target is None else partial(_log_probs, model, target=target)
    with model.gate.background():
        gates = torch.ones(model.n_layers, model.n_heads, device=inputs["input_ids"].device, requires_grad=True)
        with model.switch_heads(gates=gates, mode=mode):
            f = objective(model.last_hidden(inputs))[0]
        (grad,) = torch.autograd.grad(f, gates)
    return grad.abs().double().cpu().numpy()


def _checked_mode(model: Runner, mode: str) -> bool:
    """Whether the model is a pre-norm decoder (ValueError for other layouts); a causal model
    refuses "mean", which would hand each position what later tokens computed."""
    if mode not in ("zero", "mean"):
        raise ValueError("mode must be 'zero' or 'mean'")
    decoder = is_prenorm(model)
    if decoder and mode == "mean":
        raise ValueError("a causal model takes mode 'zero' only: the mean over positions includes later tokens")
    return decoder


def _states(
    model: Runner, text: str, max_tokens: int, mode: str
) -> tuple[Encoded, list[torch.Tensor], LmTarget | None]:
    """The encoding, the hidden states (L + 1 of (1, n, d), the last the output) and a pre-norm
    decoder's predicted next token."""
    decoder = _checked_mode(model, mode)
    enc = model.encode(text, max_tokens)
    target = lm_target(model, enc, None, None) if decoder else None
    with torch.inference_mode(), model.gate.background():
        states = model.hidden_states(enc.inputs)
    return enc, states, target


def head_importance(
    model: Runner,
    text: str,
    mode: HeadMode = "zero",
    *,
    max_tokens: int = IMPORTANCE_MAX_TOKENS,
    progress: Progress | None = None,
) -> HeadImportance:
    """Each head switched off alone (`Ablation.effect` and the mean per-token distance), Michel
    et al.'s estimate beside it, and their rank agreement over all heads."""
    enc, states, target = _states(model, text, max_tokens, mode)
    L, H = model.n_layers, model.n_heads
    gradient = _gradient(model, enc.inputs, mode, target)
    rows = [[(lay, hd)] for lay in range(L) for hd in range(H)]
    with torch.inference_mode():
        token_mean, sentence = _sweep(model, states, enc.inputs, rows, mode, progress, target)
    effect = sentence.reshape(L, H)
    agree = agreement(effect.ravel(), gradient.ravel())
    measure, next_token = _named(target)
    return HeadImportance(
        effect=effect,
        token_effect=token_mean.reshape(L, H),
        gradient=gradient,
        kendall=agree["kendall"],
        spearman=agree["spearman"],
        mode=mode,
        n_tokens=int(enc.inputs["input_ids"].shape[1]),
        capped=enc.truncated,
        measure=measure,
        next_token=next_token,
    )


def pruning_curves(
    model: Runner,
    text: str,
    importance: HeadImportance,
    orders: Sequence[Order] = ORDERS,
    *,
    points: int = CURVE_POINTS,
    max_tokens: int = IMPORTANCE_MAX_TOKENS,
    seed: int = 0,
    progress: Progress | None = None,
) -> dict[str, PruningCurve]:
    """Michel et al.'s pruning curve: the output's change with the k least important heads off
    (each order of `importance.ranking`), `points` values of k from 0 to all heads. Same text
    and cap as `importance`."""
    if points < 2:
        raise ValueError("points must be at least 2")
    enc, states, target = _states(model, text, max_tokens, importance.mode)
    n, shape = int(enc.inputs["input_ids"].shape[1]), (model.n_layers, model.n_heads)
    if n != importance.n_tokens or importance.shape != shape or importance.measure != _named(target)[0]:
        raise ValueError("importance was computed for another text or model")
    total = model.n_layers * model.n_heads
    ks = np.unique(np.linspace(0, total, min(points, total + 1)).round().astype(int))
    rankings = {order: importance.ranking(order, seed) for order in orders}
    rows = [ranking[:k] for ranking in rankings.values() for k in ks]
    with torch.inference_mode():
        token_mean, sentence = _sweep(model, states, enc.inputs, rows, importance.mode, progress, target)
    by_order = zip(sentence.reshape(-1, len(ks)), token_mean.reshape(-1, len(ks)), strict=True)
    return {
        order: PruningCurve(order, tuple(rankings[order]), ks, distance, tokens, *_named(target))
        for order, (distance, tokens) in zip(rankings, by_order, strict=True)
    }
