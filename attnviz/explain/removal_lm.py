"""What a causal language model does when input tokens are removed: the output is the
log-probability of the next token (the model's first choice) or of a typed continuation
(teacher forcing, summed over its tokens). A decoder has no [MASK]: a removed token becomes a
filler without content (unknown, else end of text) at the same position, so the first position
stays the attention sink. The effect is f(x) - f(x with tokens replaced), positive when the
target became less likely; per layer, the mean cosine distance of the output at the positions
that predict the target.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..models import Encoded, Progress, Runner
from ._model import check_query, input_times_gradient
from .prenorm import is_prenorm
from .removal import masked_states
from .value_zeroing import cosine_distance


@dataclass(frozen=True)
class LmTarget:
    """positions (m,): where the distributions are read; ids (m,): the tokens scored; start: the
    first continuation token (n for the next token; never removed); text: the target."""

    positions: np.ndarray
    ids: np.ndarray
    start: int
    text: str


def _log_probs(model: Runner, final: torch.Tensor, target: LmTarget) -> torch.Tensor:
    """(B,) sum over the target of log p(ids[t] | read at positions[t]), from final states (B, n, d)."""
    pos = torch.as_tensor(target.positions, device=final.device)
    ids = torch.as_tensor(target.ids, device=final.device)
    logits = model.unembed(final[:, pos]).double().log_softmax(-1)  # (B, m, vocab)
    return logits.gather(-1, ids[None, :, None].expand(final.shape[0], -1, 1))[..., 0].sum(-1)


def lm_target(model: Runner, enc: Encoded, query: int | None, start: int | None) -> LmTarget:
    """The continuation from token `start` on, else the text's own token after `query`, else
    the model's first choice after the last token."""
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
            wanted = np.array([int(model.unembed(model.last_hidden(enc.inputs)[0, -1]).argmax())])
    return LmTarget(np.array([read]), wanted, n, "".join(model.vocab_strings([int(wanted[0])])))


def lm_removal_effects(
    model: Runner, enc: Encoded, masks: np.ndarray, target: LmTarget, *, progress: Progress | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """For each variant b (tokens where masks[b] is True replaced by the filler): every layer's
    cosine distance at the target's positions (B, L) and the target's log-probability drop (B,)."""
    ids = [getattr(model.tokenizer, name, None) for name in ("unk_token_id", "eos_token_id", "pad_token_id")]
    fill = next((i for i in ids if isinstance(i, int)), None)  # a removed token: unknown, else end of text
    if fill is None:
        raise ValueError(f"model '{model.name}' has no unknown or end-of-text token to remove tokens with")
    masks = np.asarray(masks, dtype=bool).reshape(-1, len(enc.tokens))
    pos = torch.as_tensor(target.positions, device=enc.inputs["input_ids"].device)
    layers = np.zeros((masks.shape[0], model.n_layers))
    drops = np.zeros(masks.shape[0])
    with torch.inference_mode():
        with model.gate.background():
            states = model.hidden_states(enc.inputs)[1:]
            base = [h[:, pos] for h in states]  # L x (1, m, d)
            f0 = _log_probs(model, states[-1], target)  # (1,)
        for part, states in masked_states(model, enc, masks, fill, progress):
            for layer, h in enumerate(states):
                layers[part, layer] = cosine_distance(h[:, pos], base[layer]).mean(-1).double().cpu().numpy()
            drops[part] = (f0 - _log_probs(model, states[-1], target)).cpu().numpy()
    return layers, drops


def lm_occlusion(
    model: Runner, text: str, query: int, *, progress: Progress | None = None
) -> tuple[np.ndarray, np.ndarray, LmTarget]:
    """Occlusion (n,) and |input x gradient| (n,) of the log-probability of the token after
    `query`, and that target. Special tokens and tokens after `query` score 0."""
    enc = model.encode(text)
    n = len(enc.tokens)
    target = lm_target(model, enc, query, None)  # IndexError for a query outside the text
    ordinary = np.flatnonzero(~enc.special[: query + 1])  # later tokens cannot move row `query`
    masks = np.eye(n, dtype=bool)[ordinary]  # one removed token a variant
    scores = np.zeros(n)
    if len(ordinary):
        scores[ordinary] = lm_removal_effects(model, enc, masks, target, progress=progress)[1]
    return scores, lm_gradient_scores(model, enc, target), target


def lm_gradient_scores(model: Runner, enc: Encoded, target: LmTarget) -> np.ndarray:
    """|input x gradient| of the target's log-probability, (n,) float64."""
    return np.abs(input_times_gradient(model, enc.inputs, lambda h: _log_probs(model, h, target)[0]))


def is_lm(model: Runner) -> bool:
    """A pre-norm decoder with a language-model head: its output is a log-probability."""
    try:
        return is_prenorm(model)
    except ValueError:
        return False


def scored_encoding(
    model: Runner, text: str, query: int | None, continuation: str | None, cap: int, lm: bool
) -> tuple[Encoded, LmTarget | None]:
    """The encoding scored and, for a language model, its target (removal_lm.lm_target); the
    text's tokens must stay a prefix of the text with its continuation."""
    enc, start = model.encode(text, cap), None
    if continuation is not None:
        if not lm:
            raise ValueError("a continuation needs a causal language model (a decoder such as 'smollm2')")
        if not continuation.strip():
            raise ValueError("the continuation is empty: type the words the model should write next")
        alone, enc = enc, model.encode(text + continuation, cap)
        start = len(alone.tokens)
        head = enc.inputs["input_ids"][0, :start]
        if start >= len(enc.tokens) or not torch.equal(head, alone.inputs["input_ids"][0]):
            raise ValueError(
                "the continuation merges with the text's last token or does not fit: begin it with a space"
            )
    if query is not None:
        check_query(query, len(enc.tokens))
    return enc, lm_target(model, enc, query, start) if lm else None
