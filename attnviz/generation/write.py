"""`generate` (the package docstring says what it keeps), and the writer behind a generation's
`attention()` and `branch()`, which goes on from the KV cache as it was at the step.

Bounds: at most `MAX_STEPS` steps, and the prompt's tokens plus the steps within the runner's
token limit (`model.max_tokens`: the model's positions and the deployment's limit, the size of
the full map `Generation.attention()` builds). The rows a generation keeps grow as
layers x heads x positions x 4 bytes a step (SmolLM2 at 512 positions: 0.55 MB a step)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from ..models.base import Encoded
from ..models.threads import cpu_threads_for
from ..models.tokens import checked_text, tokenize
from ..nextword import top_k
from ..result import Attention
from .engines import Engine, engine_for
from .limits import MAX_STEPS, MAX_TYPED_CHARS, check_arguments
from .sequence import sequence_encoding
from .steps import Generation, Step

ALTERNATIVES = 5  # the likeliest tokens a step lists beside its own
# A draw's torch.Generator is seeded from (seed, position), not one generator run through the steps:
# the same seed gives the same tokens, and a branch drawn from position p on draws what a fresh
# generation from that prefix draws. A prime larger than any position keeps the pairs apart.
_SEED_STRIDE = 1_000_003


def generate(
    model: Any,
    prompt: str | Sequence[int],
    steps: int = 20,
    *,
    temperature: float = 0.0,
    top_k: int | None = None,
    seed: int = 0,
) -> Generation:
    """Let a causal model (`attnviz.load_model("smollm2")`, a local decoder, a training-lab
    model) write `steps` tokens after `prompt` (a text, or token ids). Greedy when temperature
    is 0 (the default); else a seeded draw at that temperature over the top_k likeliest, which
    the same seed repeats exactly. Ends early after the model's end-of-text token, as
    transformers' `generate` does. ValueError for an encoder, a bad argument, a prompt past the
    model's token limit, or more steps than fit (see the module's bounds)."""
    check_arguments(steps, temperature, top_k, seed)
    engine = engine_for(model)
    enc = _prompt_encoding(model, prompt)
    ids = enc.inputs["input_ids"][0].tolist()
    _check_room(model, len(ids), steps)
    logits, _ = engine.feed(ids, rows=False)
    writer = _Writer(model, enc, logits, float(temperature), top_k, int(seed), steps)
    return writer.write(engine, logits, [], [], steps)


def _prompt_encoding(model: Any, prompt: str | Sequence[int]) -> Encoded:
    if isinstance(prompt, str):
        enc = model.encode(prompt)
        if enc.truncated:
            raise ValueError(
                f"the prompt has {enc.n_input_tokens:,} tokens; model '{model.name}' reads at most "
                f"{model.max_tokens:,} here"
            )
        return enc
    ids = [int(i) for i in prompt]
    vocab = int(model.input_embeddings().num_embeddings)
    if not ids or any(not 0 <= i < vocab for i in ids):
        raise ValueError(f"a prompt of token ids needs at least one id, each from 0 to {vocab - 1}")
    if len(ids) > model.max_tokens:
        raise ValueError(f"the prompt has {len(ids):,} tokens; model '{model.name}' reads at most {model.max_tokens:,}")
    return sequence_encoding(model, ids)


def _check_room(model: Any, n_prompt: int, steps: int) -> None:
    if n_prompt + steps > model.max_tokens:
        raise ValueError(
            f"{n_prompt:,} prompt tokens and {steps:,} steps need {n_prompt + steps:,} positions; model "
            f"'{model.name}' takes at most {model.max_tokens:,} here: a shorter prompt or fewer steps"
        )


def choose(logits: torch.Tensor, temperature: float, top_k: int | None, seed: int, position: int) -> int:
    """The token id written at `position` (0-based in the whole sequence) from its logits (vocab,):
    the argmax when temperature is 0 (ties: the lowest id, as torch.argmax and transformers'
    greedy search take it), else one draw from softmax(logits / temperature) over the top_k
    likeliest (all when None), seeded by (seed, position)."""
    z = logits.detach().float().cpu()
    if temperature == 0:
        return int(torch.argmax(z))
    z = z / float(temperature)
    if top_k is not None and top_k < z.numel():
        kth = torch.topk(z, int(top_k)).values[-1]
        z = z.masked_fill(z < kth, float("-inf"))
    generator = torch.Generator().manual_seed(seed * _SEED_STRIDE + position)
    return int(torch.multinomial(torch.softmax(z, dim=-1), 1, generator=generator))


def probability(logits: np.ndarray, token_id: int) -> float:
    """The model's own softmax probability of `token_id` (before temperature and top-k), in float64."""
    z = np.asarray(logits, dtype=np.float64)
    top = float(z.max())
    return float(np.exp(z[int(token_id)] - top) / np.exp(z - top).sum())


@dataclass
class _Writer:
    """What a generation needs to attend and branch; `engine` holds its KV cache."""

    runner: Any
    prompt: Encoded
    first: torch.Tensor  # logits (vocab,) after the prompt: step 0's
    temperature: float
    top_k: int | None
    seed: int
    asked: int
    engine: Engine | None = None
    sequence: Encoded | None = None

    def write(
        self, engine: Engine, logits: torch.Tensor, done: list[Step], forced: list[int], total: int
    ) -> Generation:
        """Steps after `done` until there are `total` (or the end-of-text token): the `forced`
        ids first, then the model's choices. The engine holds the positions before them."""
        r = self.runner
        ids = self.prompt.inputs["input_ids"][0].tolist() + [st.token_id for st in done]
        eos = getattr(getattr(r, "config", None), "eos_token_id", None)  # where transformers' generate stops
        stop = {int(e) for e in (eos if isinstance(eos, list | tuple) else [eos]) if e is not None}
        steps = list(done)
        while len(steps) < total:
            start = time.perf_counter()
            was_forced = bool(forced)
            tid = forced.pop(0) if forced else choose(logits, self.temperature, self.top_k, self.seed, len(ids))
            z = logits.numpy()
            alt_ids, alt_p = (a.tolist() for a in top_k(z, ALTERNATIVES))
            names = r.vocab_strings([tid, *alt_ids])
            logits, rows = engine.feed([tid])
            assert rows is not None
            grouped, ungrouped = engine.cache_bytes(len(ids) + 1)
            steps.append(
                Step(names[0], tid, probability(z, tid), list(zip(names[1:], alt_p, strict=True)),
                     np.ascontiguousarray(rows[:, :, 0]), grouped, ungrouped, time.perf_counter() - start,
                     tuple(alt_ids), was_forced)
            )  # fmt: skip
            ids.append(tid)
            if tid in stop and not forced:
                break
        seq = sequence_encoding(r, ids, self.prompt)
        mine = replace(self, engine=engine, sequence=seq)
        return Generation(
            model=r.name, prompt=self.prompt.text, text=seq.text, ids=tuple(ids), n_prompt=len(self.prompt.tokens),
            tokens=list(seq.tokens), steps=steps, temperature=self.temperature, top_k=self.top_k, seed=self.seed,
            kv_heads=getattr(r, "kv_heads", None), writer=mine,
        )  # fmt: skip

    def attention(self) -> Attention:
        r, enc = self.runner, self.sequence
        assert enc is not None
        with r.gate.interactive(), torch.inference_mode(), cpu_threads_for(len(enc.tokens), r.device):
            weights = r.attention_array(enc.inputs)
        return r.result(enc, weights)

    def branch(self, gen: Generation, step: int, token: str | int) -> Generation:
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < len(gen.steps):
            raise ValueError(f"step must be from 0 to {len(gen.steps) - 1}, got {step!r}")
        forced = self._forced(gen.steps[step], token)
        total = max(self.asked, step + len(forced))
        if total > MAX_STEPS:
            raise ValueError(f"the branch would need {total} steps; at most {MAX_STEPS}")
        _check_room(self.runner, gen.n_prompt, total)
        assert self.engine is not None
        at = gen.n_prompt + step  # positions before the step's token
        if step == 0:
            engine, logits = self.engine.fork(at), self.first
        else:  # the logits at the branch point: the token before it run again over the cache before it
            engine = self.engine.fork(at - 1)
            logits, _ = engine.feed([gen.ids[at - 1]], rows=False)
        fresh = replace(self, asked=total, engine=None, sequence=None)
        return fresh.write(engine, logits, gen.steps[:step], forced, total)

    def _forced(self, step: Step, token: str | int) -> list[int]:
        """The ids `branch` writes: an alternative's (or the step's own) by its name, a token id,
        else the tokens of a typed text."""
        if isinstance(token, int) and not isinstance(token, bool):
            vocab = int(self.runner.input_embeddings().num_embeddings)
            if not 0 <= token < vocab:
                raise ValueError(f"a token id is from 0 to {vocab - 1}, got {token}")
            return [token]
        if not isinstance(token, str):
            raise ValueError(f"a branch's token is a text or a token id, got {type(token).__name__}")
        named = dict(zip((t for t, _ in step.alternatives), step.alternative_ids, strict=True))
        named[step.token] = step.token_id
        if token in named:
            return [named[token]]
        if len(token) > MAX_TYPED_CHARS:
            raise ValueError(f"a typed token is at most {MAX_TYPED_CHARS:,} characters")
        ids = [
            int(i)
            for i in tokenize(self.runner.tokenizer, checked_text(token), None, add_special_tokens=False)["input_ids"]
        ]
        if not ids:
            raise ValueError("the typed text has no tokens")
        return ids
