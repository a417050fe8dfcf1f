"""Attributions for one query token, to contrast with attention: occlusion (leave-one-out),
input x gradient and integrated gradients (Sundararajan et al. 2017)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch

from ..models import Progress, Runner
from ._model import check_query, expand, in_batches, with_gradients
from .removal import along_output, gradient_scores, masked_states
from .value_zeroing import cosine_distance


def occlusion(model: Runner, text: str, query: int, *, progress: Progress | None = None) -> np.ndarray:
    """Leave-one-out for token `query`: (n,) float64, score[j] = cosine distance between the
    query's final representation with token j replaced by [MASK] and without. Special tokens
    are not masked and score 0; the query itself is scored."""
    mask_id = getattr(model.tokenizer, "mask_token_id", None)
    if mask_id is None:
        raise ValueError(f"model '{model.name}' has no [MASK] token to occlude with")
    enc = model.encode(text)
    n = int(enc.inputs["input_ids"].shape[1])
    check_query(query, n)
    targets = np.flatnonzero(~enc.special)
    masks = np.eye(n, dtype=bool)[targets]  # one masked token a variant
    scores = np.zeros(n)
    with torch.inference_mode():
        with model.gate.background():
            h0 = model.last_hidden(enc.inputs)[0, query]  # (d,)
        for part, (h,) in masked_states(model, enc, masks, mask_id, progress, last_only=True):
            scores[targets[part]] = cosine_distance(h[:, query], h0[None]).double().cpu().numpy()
    return scores


@with_gradients  # encode outside inference mode too: the embedding lookup saves the ids for backward
def input_x_gradient(model: Runner, text: str, query: int) -> np.ndarray:
    """Input x gradient for token `query`: (n,) float64, s_j = sum_d e[j,d] dF/de[j,d] with F
    the query's final representation projected on its own direction (`removal.along_output`).
    Every position is scored, special tokens included."""
    enc = model.encode(text)
    check_query(query, enc.inputs["input_ids"].shape[1])
    return gradient_scores(model, enc, query, signed=True)


@with_gradients
def _integrated(
    model: Runner,
    text: str,
    query: int,
    steps: int,
    baseline: Literal["mask", "zero"],
    progress: Progress | None = None,
) -> tuple[np.ndarray, float]:
    """Integrated gradients (Sundararajan et al. 2017) by the midpoint rule on `steps` points:
    s_j = sum_d (e - e')[j,d] * mean_k dF/de[j,d] at e' + (k + 1/2)/steps (e - e').
    Returns the scores and the completeness gap |sum_j s_j - (F(e) - F(e'))|."""
    if steps < 1:
        raise ValueError("steps must be at least 1")
    if baseline not in ("mask", "zero"):
        raise ValueError("baseline must be 'mask' or 'zero'")
    enc = model.encode(text)
    ids = enc.inputs["input_ids"]
    n = ids.shape[1]
    check_query(query, n)
    f = along_output(model, enc.inputs, query)

    def objective(e: torch.Tensor) -> torch.Tensor:  # word embeddings (b, n, d) -> F (b,)
        return f(model.last_hidden(expand(enc.inputs, e.shape[0]), inputs_embeds=e))

    table = model.input_embeddings()
    keep = torch.as_tensor(enc.special, device=ids.device)[None, :, None]  # (1, n, 1)
    e = table(ids).detach()  # (1, n, d)
    if baseline == "mask":
        mask_id = getattr(model.tokenizer, "mask_token_id", None)
        if mask_id is None:
            raise ValueError(f"model '{model.name}' has no [MASK] token for the baseline")
        base = table(torch.full_like(ids, mask_id)).detach()
    else:
        base = torch.zeros_like(e)
    # Special tokens keep their embeddings in the baseline, so they score 0 and the scores
    # share out F(e) - F(e') among the ordinary tokens.
    base = torch.where(keep, e, base)
    delta = e - base  # (1, n, d)
    total = torch.zeros_like(e)
    alphas = (torch.arange(steps, dtype=e.dtype, device=e.device) + 0.5) / steps
    for part in in_batches(model, steps, n, grad=True, progress=progress):
        point = (base + alphas[part, None, None] * delta).requires_grad_(True)  # (b, n, d)
        (grad,) = torch.autograd.grad(objective(point).sum(), point)
        total += grad.sum(dim=0, keepdim=True)
    scores = (delta * total / steps).sum(-1)[0].double()  # (n,)
    with torch.no_grad(), model.gate.background():
        f_e, f_base = objective(torch.cat([e, base])).double().tolist()
    gap = abs(float(scores.sum()) - (f_e - f_base))
    return scores.detach().cpu().numpy(), gap


def integrated_gradients(
    model: Runner,
    text: str,
    query: int,
    steps: int = 32,
    baseline: Literal["mask", "zero"] = "mask",
    *,
    progress: Progress | None = None,
) -> np.ndarray:
    """Integrated gradients of F (see `input_x_gradient`) for token `query`: (n,) float64.
    baseline "mask": ordinary tokens' embeddings replaced by [MASK]'s; "zero": by zeros. Special
    tokens score 0; the scores add up to F(input) - F(baseline) as steps grow."""
    return _integrated(model, text, query, steps, baseline, progress)[0]


def completeness_gap(
    model: Runner, text: str, query: int, steps: int = 32, baseline: Literal["mask", "zero"] = "mask"
) -> float:
    """|sum_j s_j - (F(input) - F(baseline))| of `integrated_gradients`: falls as steps grow."""
    return _integrated(model, text, query, steps, baseline)[1]
