"""What the model does when input tokens are removed, the measure every explanation is scored
against (faithfulness.py): each variant of the text replaces some ordinary tokens by [MASK]
(positions stay where they are, as `occlusion` does) and the output moves by a cosine distance.

The output is position `query`'s representation, or for query=None the sentence embedding the
embedded model was trained to give: all-MiniLM-L6-v2 is a sentence-transformers model whose
embedding is the mean of the last layer's token vectors over the attention mask (specials
included; its final L2 normalisation does not change a cosine). The same pooling is applied to
every layer's output, so the effect is also measured layer by layer.

Also here: input x gradient for the same output (the gradient baseline of the scoreboard), and
`embed`, `attnviz.embed`: that pooled output of one text, L2-normalised as MiniLM and
multilingual-e5-small publish their embeddings (a cosine is unchanged by it). multilingual-e5
expects a "query: " or "passage: " prefix on the text; `embed` adds none.
"""

from __future__ import annotations

import numpy as np
import torch

from ..models import Encoded, Progress, Runner
from ._model import check_query, expand, in_batches, with_gradients
from .value_zeroing import cosine_distance

__all__ = ["embed", "gradient_scores", "pool", "removal_effects"]


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
    """(B, L) float64: cosine distance between the output of each layer for the text and for
    each variant b, in which the tokens where masks[b] (B, n) is True are replaced by [MASK].
    Batches go through the background lane, with progress between them."""
    mask_id = getattr(model.tokenizer, "mask_token_id", None)
    if mask_id is None:
        raise ValueError(f"model '{model.name}' has no [MASK] token to remove tokens with")
    ids = enc.inputs["input_ids"]  # (1, n)
    n = int(ids.shape[1])
    if query is not None:
        check_query(query, n)
    masks = np.asarray(masks, dtype=bool).reshape(-1, n)
    out = np.zeros((masks.shape[0], model.n_layers))
    with torch.inference_mode():
        with model.gate.background():
            base = [pool(h, query) for h in model.hidden_states(enc.inputs)[1:]]  # L x (1, d)
        for part in in_batches(model, masks.shape[0], n, progress=progress):
            b = part.stop - part.start
            batch = expand(enc.inputs, b)
            batch["input_ids"] = ids.expand(b, -1).masked_fill(torch.from_numpy(masks[part]).to(ids.device), mask_id)
            states = model.hidden_states(batch)[1:]  # L x (b, n, d)
            for layer, h in enumerate(states):
                out[part, layer] = cosine_distance(pool(h, query), base[layer]).double().cpu().numpy()
    return out


@with_gradients
def gradient_scores(model: Runner, enc: Encoded, query: int | None) -> np.ndarray:
    """|input x gradient| for the same output (n,) float64: |sum_d e[j,d] dF/de[j,d]| with
    F = <output(e), u>, u the unperturbed output's direction (as explain.input_x_gradient does
    for one token, here also for the sentence embedding). Special tokens included."""
    inputs = enc.inputs
    with model.gate.background():
        with torch.no_grad():
            h0 = pool(model.last_hidden(inputs), query)[0]
        u = h0 / h0.norm()
        e = model.input_embeddings()(inputs["input_ids"]).detach().requires_grad_(True)  # (1, n, d)
        f = pool(model.last_hidden(inputs, inputs_embeds=e), query)[0] @ u
        (grad,) = torch.autograd.grad(f, e)
    return (e * grad).sum(-1)[0].abs().double().detach().cpu().numpy()
