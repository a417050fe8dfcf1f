"""What an encoder does when input tokens are removed, the measure the scoreboard scores every
explanation against: ordinary tokens replaced by [MASK] (positions kept), the output's cosine
distance at every layer. The output is position `query`'s vector, or the sentence embedding:
the mean of the token vectors over the mask, as all-MiniLM-L6-v2 (sentence-transformers) pools.

`embed` (`attnviz.embed`) is that embedding L2-normalised, as MiniLM and multilingual-e5-small
publish theirs; it adds no "query: "/"passage: " prefix that multilingual-e5 expects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import torch

from ..models import Encoded, Progress, Runner
from ._model import check_query, expand, in_batches, input_times_gradient, with_gradients
from .value_zeroing import cosine_distance


def pool(hidden: torch.Tensor, query: int | None) -> torch.Tensor:
    """(B, n, d) -> (B, d): position `query`, or the mean over positions (the sentence embedding)."""
    return hidden.mean(dim=1) if query is None else hidden[:, query]


def embed(model: Runner, text: str, max_tokens: int | None = None) -> np.ndarray:
    """(d,) float32, unit length: the mean of the last layer's token vectors of `text`."""
    enc = model.encode(text, max_tokens)
    with model.gate.interactive(), torch.inference_mode():
        pooled = pool(model.last_hidden(enc.inputs), None)[0]
    v = pooled.float().cpu().numpy()
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)


def removal_effects(
    model: Runner, enc: Encoded, masks: np.ndarray, query: int | None, *, progress: Progress | None = None
) -> np.ndarray:
    """(B, L) float64: each layer's output's cosine distance between the text and variant b, in
    which the tokens where masks[b] (B, n) is True are [MASK]."""
    mask_id = getattr(model.tokenizer, "mask_token_id", None)
    if mask_id is None:
        raise ValueError(f"model '{model.name}' has no [MASK] token to remove tokens with")
    if query is not None:
        check_query(query, len(enc.tokens))
    masks = np.asarray(masks, dtype=bool).reshape(-1, len(enc.tokens))
    out = np.zeros((masks.shape[0], model.n_layers))
    with torch.inference_mode():
        with model.gate.background():
            base = [pool(h, query) for h in model.hidden_states(enc.inputs)[1:]]  # L x (1, d)
        for part, states in masked_states(model, enc, masks, mask_id, progress):
            for layer, h in enumerate(states):
                out[part, layer] = cosine_distance(pool(h, query), base[layer]).double().cpu().numpy()
    return out


def masked_states(
    model: Runner, enc: Encoded, masks: np.ndarray, fill: int, progress: Progress | None, last_only: bool = False
) -> Iterator[tuple[slice, list[torch.Tensor]]]:
    """For each batch of variants (tokens where masks[b] (B, n) is True set to `fill`): its slice
    and every layer's output, L x (b, n, d) (with `last_only`, the final hidden states alone)."""
    ids = enc.inputs["input_ids"]  # (1, n)
    for part in in_batches(model, masks.shape[0], int(ids.shape[1]), progress=progress):
        b = part.stop - part.start
        batch = expand(enc.inputs, b)
        batch["input_ids"] = ids.expand(b, -1).masked_fill(torch.from_numpy(masks[part]).to(ids.device), fill)
        yield part, [model.last_hidden(batch)] if last_only else model.hidden_states(batch)[1:]


def along_output(
    model: Runner, inputs: dict[str, torch.Tensor], query: int | None
) -> Callable[[torch.Tensor], torch.Tensor]:
    """F(h) = <pool(h, query), u> (B,) of final hidden states h (B, n, d), u the unperturbed
    output's unit direction: the output's length along where it points, F(h0) = ||pool(h0)||."""
    with torch.no_grad(), model.gate.background():  # not inference mode: u is saved for the backward pass
        h0 = pool(model.last_hidden(inputs), query)[0]
    u = h0 / h0.norm()
    return lambda h: pool(h, query) @ u


@with_gradients
def gradient_scores(model: Runner, enc: Encoded, query: int | None, signed: bool = False) -> np.ndarray:
    """|input x gradient| (n,) float64 (with `signed`, input x gradient) of F = `along_output`
    (explain.input_x_gradient, here also for the sentence embedding)."""
    f = along_output(model, enc.inputs, query)
    scores = input_times_gradient(model, enc.inputs, lambda h: f(h)[0])
    return scores if signed else np.abs(scores)
