"""What a causal language model does when input tokens are removed: the output is the
log-probability of the next token (the model's own first choice after the text) or of a
continuation the user types, summed over its tokens (teacher forcing). The scoreboard ranks
explanations of a decoder against this output (scoreboard.py).

A decoder has no [MASK]: a removed token is replaced by a filler token that carries no
content (the tokenizer's unknown token, else its end-of-text token; SmolLM2's is
"<|endoftext|>"), at the same position, so the first position keeps its role as the attention
sink and positions stay where they are (as `removal.removal_effects` does with [MASK]). The
effect is the drop of the log-probability, f(x) - f(x with tokens replaced): positive when
removing them made the target less likely. Per layer, the cosine distance of each layer's
output at the positions that predict the target is measured too (mean over them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..models import Encoded, Progress, Runner
from ._model import check_query, expand, in_batches, with_gradients
from .prenorm import is_prenorm
from .value_zeroing import cosine_distance

__all__ = [
    "LmTarget",
    "filler_id",
    "is_lm",
    "lm_gradient_scores",
    "lm_occlusion",
    "lm_removal_effects",
    "lm_target",
    "scored_encoding",
]


@dataclass(frozen=True)
class LmTarget:
    """positions (m,): where the next-token distributions are read; ids (m,): the tokens whose
    log-probability is summed; start: the first continuation token (n when the target is the
    next token after the text; tokens from `start` on are never removed); text: the target."""

    positions: np.ndarray
    ids: np.ndarray
    start: int
    text: str


def filler_id(model: Runner) -> int:
    """The token a removed token becomes in a causal model: unknown, else end of text."""
    tok = model.tokenizer
    for name in ("unk_token_id", "eos_token_id", "pad_token_id"):
        found = getattr(tok, name, None)
        if isinstance(found, int):
            return found
    raise ValueError(f"model '{model.name}' has no unknown or end-of-text token to remove tokens with")


def _log_probs(model: Runner, final: torch.Tensor, target: LmTarget) -> torch.Tensor:
    """(B,) sum over the target of log p(ids[t] | read at positions[t]), from final states (B, n, d)."""
    pos = torch.as_tensor(target.positions, device=final.device)
    ids = torch.as_tensor(target.ids, device=final.device)
    logits = model.unembed(final[:, pos]).double().log_softmax(-1)  # (B, m, vocab)
    return logits.gather(-1, ids[None, :, None].expand(final.shape[0], -1, 1))[..., 0].sum(-1)


def lm_target(model: Runner, enc: Encoded, query: int | None, start: int | None) -> LmTarget:
    """The output of the scoreboard for a causal model: the continuation from token `start` on
    (typed by the user), else the text's own next token after position `query`, else the
    model's first choice after the last token."""
    ids = enc.inputs["input_ids"][0]
    n = int(ids.shape[0])
    if start is not None:
        if not 0 < start < n:
            raise ValueError("the continuation must follow at least one token of the text and fit the token limit")
        positions = np.arange(start - 1, n - 1)
        wanted = ids[start:].cpu().numpy()
        return LmTarget(positions, wanted, start, str(model.tokenizer.decode(wanted.tolist())))
    if query is not None:
        check_query(query, n)
    read = n - 1 if query is None else query
    if read < n - 1:
        wanted = np.array([int(ids[read + 1])])
    else:
        with torch.inference_mode(), model.gate.background():
            final = model.last_hidden(enc.inputs)
            wanted = np.array([int(model.unembed(final[0, -1]).argmax())])
    return LmTarget(np.array([read]), wanted, n, "".join(model.vocab_strings([int(wanted[0])])))


def lm_removal_effects(
    model: Runner, enc: Encoded, masks: np.ndarray, target: LmTarget, *, progress: Progress | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """For each variant b (tokens where masks[b] is True replaced by the filler): the cosine
    distance of every layer's output at the target's positions, (B, L), and the drop of the
    target's log-probability, (B,). Batches go through the background lane."""
    ids = enc.inputs["input_ids"]
    n = int(ids.shape[1])
    masks = np.asarray(masks, dtype=bool).reshape(-1, n)
    filler = filler_id(model)
    pos = torch.as_tensor(target.positions, device=ids.device)
    layers = np.zeros((masks.shape[0], model.n_layers))
    drops = np.zeros(masks.shape[0])
    with torch.inference_mode():
        with model.gate.background():
            states = model.hidden_states(enc.inputs)[1:]
            base = [h[:, pos] for h in states]  # L x (1, m, d)
            f0 = _log_probs(model, states[-1], target)  # (1,)
        for part in in_batches(model, masks.shape[0], n, progress=progress):
            b = part.stop - part.start
            batch = expand(enc.inputs, b)
            batch["input_ids"] = ids.expand(b, -1).masked_fill(torch.from_numpy(masks[part]).to(ids.device), filler)
            states = model.hidden_states(batch)[1:]
            for layer, h in enumerate(states):
                layers[part, layer] = cosine_distance(h[:, pos], base[layer]).mean(-1).double().cpu().numpy()
            drops[part] = (f0 - _log_probs(model, states[-1], target)).cpu().numpy()
    return layers, drops


def lm_occlusion(
    model: Runner, text: str, query: int, *, progress: Progress | None = None
) -> tuple[np.ndarray, np.ndarray, LmTarget]:
    """Occlusion and input x gradient of a causal LM for token `query`: the output is the
    log-probability of the token that follows `query` (the text's own next token, or the model's
    first choice after the last token). Returns occlusion (n,), the drop of that log-probability
    when token j alone is replaced by the filler (0 for special tokens, and for tokens after
    `query`, which a causal model cannot read there); |input x gradient| (n,) of the same
    log-probability; and the target."""
    enc = model.encode(text)
    n = len(enc.tokens)
    check_query(query, n)
    target = lm_target(model, enc, query, None)
    ordinary = np.flatnonzero(~enc.special[: query + 1])  # later tokens cannot move row `query`
    masks = np.zeros((len(ordinary), n), dtype=bool)
    masks[np.arange(len(ordinary)), ordinary] = True
    scores = np.zeros(n)
    if len(ordinary):
        scores[ordinary] = lm_removal_effects(model, enc, masks, target, progress=progress)[1]
    return scores, lm_gradient_scores(model, enc, target), target


@with_gradients
def lm_gradient_scores(model: Runner, enc: Encoded, target: LmTarget) -> np.ndarray:
    """|input x gradient| of the target's log-probability, (n,) float64."""
    inputs = enc.inputs
    with model.gate.background():
        e = model.input_embeddings()(inputs["input_ids"]).detach().requires_grad_(True)  # (1, n, d)
        f = _log_probs(model, model.last_hidden(inputs, inputs_embeds=e), target)[0]
        (grad,) = torch.autograd.grad(f, e)
    return (e * grad).sum(-1)[0].abs().double().detach().cpu().numpy()


def is_lm(model: Runner) -> bool:
    """A pre-norm decoder with a language-model head: its output is a log-probability."""
    try:
        return is_prenorm(model)
    except ValueError:
        return False


def scored_encoding(
    model: Runner, text: str, query: int | None, continuation: str | None, cap: int, lm: bool
) -> tuple[Encoded, LmTarget | None]:
    """The encoding scored and, for a language model, its target (removal_lm.lm_target)."""
    if continuation is not None and not lm:
        raise ValueError("a continuation needs a causal language model (a decoder such as 'smollm2')")
    enc, start = _continued(model, text, continuation, cap)
    if query is not None:
        check_query(query, len(enc.tokens))
    return enc, lm_target(model, enc, query, start) if lm else None


def _continued(model: Runner, text: str, continuation: str | None, cap: int) -> tuple[Encoded, int | None]:
    """The encoding scored and, with a continuation, the index of its first token: the text's
    own tokens must stay a prefix of the tokens of text + continuation."""
    if continuation is None:
        return model.encode(text, cap), None
    if not continuation.strip():
        raise ValueError("the continuation is empty: type the words the model should write next")
    alone = model.encode(text, cap)
    enc = model.encode(text + continuation, cap)
    start = len(alone.tokens)
    head = enc.inputs["input_ids"][0, :start]
    if start >= len(enc.tokens) or not torch.equal(head, alone.inputs["input_ids"][0]):
        raise ValueError("the continuation merges with the text's last token or does not fit: begin it with a space")
    return enc, start
