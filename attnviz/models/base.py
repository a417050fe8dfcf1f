"""The seam between the engines and everything else: the `Runner` protocol and what every
runner shares (tokenising, limits, `attend`, the one out-of-memory fallback, per-head steps,
layer traces and head switches). Torch tensors never leave the runners and the explanation
methods: `attend` returns numpy."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence

from ..result import OOM_CPU, Attention, Note
from ..scratch import LayerParts, causal_mask, post_ln_layer, scaled_dot_product_attention
from .errors import ModelLoadError
from .gate import ForwardGate, gate_for
from .prenorm_parts import PreNormParts
from .switching import HeadMode, head_switch, heads_by_layer, projection_parts
from .threads import cpu_threads_for, this_thread
from .tokens import Encoded, encode_counted, encoded, model_inputs, token_limit

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

Inputs = dict[str, torch.Tensor]
Steps = dict[str, np.ndarray]
OOM_NOTE = "{device} ran out of memory: this result was computed on the CPU."


def oom_note(device: object) -> Note:
    """The note on a result the CPU computed after `device` ran out of memory (key `OOM_CPU`)."""
    return Note(OOM_NOTE.format(device=device), key=OOM_CPU)


def kv_shape(runner: Any) -> tuple[int, int]:
    """(key/value heads, head size) of a runner: grouped heads counted once (`kv_heads`), the size
    from its config's head_dim, else the config's width over the query heads."""
    cfg, heads, kv = runner.config, int(runner.n_heads), runner.kv_heads
    widths = (getattr(cfg, a, None) for a in ("hidden_size", "n_embd", "dim", "d_model"))
    head_dim = getattr(cfg, "head_dim", None) or int(next((w for w in widths if w), 0)) // heads
    return (heads if kv is None else int(np.max(kv)) + 1), int(head_dim)


@runtime_checkable
class Runner(Protocol):
    """What the app, the command line and the explanation methods may ask of a model."""

    name: str
    n_layers: int
    n_heads: int
    causal: bool
    max_tokens: int
    device: torch.device
    tokenizer: PreTrainedTokenizerBase
    gate: ForwardGate

    def encode(self, text: str, max_tokens: int | None = None) -> Encoded: ...

    def fit(self, text: str, max_tokens: int | None = None) -> str: ...

    def attend(self, text: str, max_tokens: int | None = None) -> Attention: ...

    def attention_array(self, inputs: Inputs) -> np.ndarray: ...

    def attention_maps(self, inputs: Inputs) -> list[torch.Tensor]:
        """One (B, heads, n, n) tensor per layer."""

    def attend_batch(self, texts: list[str], max_tokens: int | None = None) -> list[Attention]: ...

    def last_hidden(self, inputs: Inputs, inputs_embeds: torch.Tensor | None = None) -> torch.Tensor:
        """Final hidden states (B, n, d); with `inputs_embeds` (B, n, d) in place of the word
        embeddings of `inputs["input_ids"]` (for gradients). Not under inference mode here:
        callers choose."""

    def input_embeddings(self) -> torch.nn.Embedding:
        """The word-embedding table (vocab, d)."""

    def layers(self) -> list[LayerParts]: ...

    def prenorm_layers(self) -> list[PreNormParts]: ...

    def unembed(self, hidden: torch.Tensor) -> torch.Tensor: ...

    def hidden_states(self, inputs: Inputs) -> list[torch.Tensor]:
        """The hidden state entering each layer, then the last layer's output: L + 1 tensors (B, n, d)."""

    def result(self, enc: Encoded, weights: np.ndarray) -> Attention: ...

    def next_token_logits(self, text: str, max_tokens: int | None = None) -> np.ndarray: ...

    def residual_logits(
        self, text: str, position: int = -1, max_tokens: int | None = None
    ) -> tuple[Encoded, np.ndarray]: ...

    def vocab_strings(self, ids: list[int]) -> list[str]: ...

    def steps(self, text: str, layer: int = 0, head: int = 0, max_tokens: int | None = None) -> Steps: ...

    def trace(self, inputs: Inputs) -> tuple[np.ndarray, list[dict[str, torch.Tensor]]]: ...

    def layer_trace(self, inputs: Inputs, layer: int, **kwargs: torch.Tensor) -> dict[str, torch.Tensor]: ...

    def switch_heads(
        self, heads: Iterable[tuple[int, int]] = (), mode: HeadMode = "zero", gates: torch.Tensor | None = None
    ) -> contextlib.AbstractContextManager[None]: ...


def traced(
    name: str, parts: list[LayerParts], forward: Callable[[], np.ndarray]
) -> tuple[np.ndarray, list[dict[str, torch.Tensor]]]:
    """`Runner.trace` of `forward()` (the weights (L, H, n, n) of a batch of one) through the
    layers `parts`: hooks on each value and output projection record "x", "values" and
    "attn_out", for passes on this thread only."""
    records: list[dict[str, torch.Tensor]] = [{} for _ in parts]

    def keep(record: dict[str, torch.Tensor], out_name: str, in_name: str | None = None) -> Callable[..., None]:
        def hook(_m: torch.nn.Module, args: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
            record[out_name] = out[0]  # batch of one
            if in_name is not None:
                record[in_name] = args[0][0]

        return this_thread(hook)

    with contextlib.ExitStack() as stack:
        for p, record in zip(parts, records, strict=True):
            stack.callback(p.value.register_forward_hook(keep(record, "values", "x")).remove)
            stack.callback(p.output.register_forward_hook(keep(record, "attn_out")).remove)
        weights = forward()
    if weights.shape[0] != len(parts) or any(len(r) != 3 for r in records):
        raise ValueError(f"model '{name}' did not run each of its {len(parts)} layers once")
    return weights, records


class RunnerBase(Runner):
    """What every runner shares; a subclass gives the forward passes (`attention_maps`,
    `last_hidden`, `hidden_states`) and `input_embeddings`."""

    causal: bool = False
    kv_heads: np.ndarray | None = None  # (heads,) the key/value head each query head reads

    def __init__(self, tokenizer: PreTrainedTokenizerBase, device: torch.device, max_tokens: int, model_limit: int):
        self.tokenizer = tokenizer
        self.device = device
        self.max_tokens = token_limit(max_tokens, model_limit)
        self.gate = gate_for((type(self).__name__, id(self)))  # load_model gives a stable key
        self._twin_lock = threading.Lock()
        self._reload: Callable[[], RunnerBase] | None = None  # set by load_model: the same model on the CPU
        self._cpu_twin: RunnerBase | None = None
        self._switch_lock = threading.Lock()  # head switches change the model for everyone: one at a time

    # --- defaults: what a runner without a language-model head or a known layout answers -------

    def next_token_logits(self, text: str, max_tokens: int | None = None) -> np.ndarray:
        """A causal LM's logits (vocab,) for the token after `text`. ValueError without an LM head."""
        raise ValueError(f"model '{self.name}' has no language-model head: the next word needs a decoder")

    def residual_logits(
        self, text: str, position: int = -1, max_tokens: int | None = None
    ) -> tuple[Encoded, np.ndarray]:
        """The logit lens: the final norm and the unembedding applied to each layer's output
        (the residual stream) at `position`, (layers, vocab) float32; the last row is the
        model's own logits there. ValueError without an LM head."""
        raise ValueError(f"model '{self.name}' has no language-model head: the logit lens needs a decoder")

    def unembed(self, hidden: torch.Tensor) -> torch.Tensor:
        """A causal LM's logits (..., vocab) from final hidden states (..., d), as `last_hidden`
        returns them (after the final norm). ValueError without a language-model head."""
        raise ValueError(f"model '{self.name}' has no language-model head: the next word needs a decoder")

    def vocab_strings(self, ids: list[int]) -> list[str]:
        """Vocabulary entries as text, for predictions."""
        return [str(self.tokenizer.decode([int(i)])) for i in ids]

    def layers(self) -> list[LayerParts]:
        """Each layer's parts, for methods that decompose or recompute a layer. ValueError when
        the architecture is not a post-LayerNorm encoder (GPT-2, for example)."""
        raise ValueError(f"model '{self.name}' does not expose its layers (a BERT-family encoder does)")

    def prenorm_layers(self) -> list[PreNormParts]:
        """Each layer's parts of a pre-norm decoder (Llama family). ValueError for other layouts."""
        raise ValueError(f"model '{self.name}' is not a pre-norm decoder of the Llama family (Llama, Qwen2, SmolLM2)")

    # --- tokenising and attention -----------------------------------------------------------

    def encode(self, text: str, max_tokens: int | None = None) -> Encoded:
        """Tokenise, truncating to the model's limit (or `max_tokens`) and flagging it."""
        raw, enc = encoded(self.tokenizer, text, token_limit(max_tokens, self.max_tokens))
        enc.inputs = {
            k: torch.tensor([v], dtype=torch.long, device=self.device)
            for k, v in model_inputs(self.tokenizer, raw).items()
        }
        return enc

    def fit(self, text: str, max_tokens: int | None = None) -> str:
        """The prefix of `text` that `encode` keeps within `max_tokens` tokens, so a method that
        encodes the text itself sees the same tokens as the views (a notice says it was cut)."""
        enc, _ = encode_counted(self.tokenizer, text, token_limit(max_tokens, self.max_tokens))
        ends = [end for _, end in enc.offsets if end]
        return text[: max(ends)] if ends and max(ends) < len(text) else text

    def attend(self, text: str, max_tokens: int | None = None) -> Attention:
        """`text` through the model (short: on one CPU thread, models/threads.py); out of memory: on CPU."""
        return self.attend_encoded(self.encode(text, max_tokens), lambda cpu: cpu.attend(text, max_tokens))

    def attend_encoded(self, enc: Encoded, on_cpu: Callable[[RunnerBase], Attention]) -> Attention:
        """The result of `enc`; when the device runs out of memory, `on_cpu(the CPU twin)` with a
        note, the twin (the same model on the CPU) loaded once, on first need."""
        try:
            with self.gate.interactive(), torch.inference_mode(), cpu_threads_for(len(enc.tokens), self.device):
                weights = self.attention_array(enc.inputs)
        except torch.OutOfMemoryError as oom:
            if self.device.type == "cpu":
                raise
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            with self._twin_lock:  # two requests failing at once load one CPU copy, not two
                if self._cpu_twin is None:
                    if self._reload is None:
                        raise ModelLoadError(
                            f"out of memory on {self.device} and no way to reload '{self.name}' on the CPU"
                        ) from oom
                    self._cpu_twin = self._reload()
            att = on_cpu(self._cpu_twin)
            return replace(att, notes=(*att.notes, oom_note(self.device)))
        return self.result(enc, weights)

    def result(self, enc: Encoded, weights: np.ndarray) -> Attention:
        return enc.attention(weights, self.name, str(self.device), self.causal, self.kv_heads)

    def attend_batch(self, texts: list[str], max_tokens: int | None = None) -> list[Attention]:
        """Several texts in one padded forward pass; each result equals `attend(text)` (padding
        columns get weight 0 under the mask, and each map is cut back to its own n x n)."""
        encs = [self.encode(text, max_tokens) for text in texts]
        if not encs:
            return []
        pad_id = getattr(self.tokenizer, "pad_token_id", None) or 0
        batch = {  # (B, width), right-padded; attention_mask is 0 on the padding
            name: pad_sequence(
                [e.inputs[name][0] for e in encs], batch_first=True, padding_value=pad_id if name == "input_ids" else 0
            )
            for name in encs[0].inputs
        }
        with self.gate.interactive(), torch.inference_mode():
            stacked = torch.stack(self._maps(batch), dim=1).float().cpu()  # (B, L, H, width, width)
        return [
            self.result(enc, stacked[b, :, :, : len(enc.tokens), : len(enc.tokens)].contiguous().numpy())
            for b, enc in enumerate(encs)
        ]

    def attention_array(self, inputs: Inputs) -> np.ndarray:
        """All layers' weights of a batch of one as a float32 numpy array (L, H, n, n)."""
        return torch.stack([m[0] for m in self._maps(inputs)]).float().cpu().numpy()

    def _maps(self, inputs: Inputs) -> list[torch.Tensor]:
        """`attention_maps`, refused when the model gave none (SDPA returns no weights)."""
        maps = self.attention_maps(inputs)
        if not maps or any(m is None for m in maps):
            raise ModelLoadError(f"model '{self.name}' returned no attention weights")
        return maps

    # --- inside the layers ------------------------------------------------------------------

    def steps(self, text: str, layer: int = 0, head: int = 0, max_tokens: int | None = None) -> Steps:
        """Every intermediate of one head's attention, for the lab walkthrough (numpy):
        x (n, d) the layer input; q, k, v (n, hs); scores = q k^T; scaled = scores / sqrt(hs)
        (or scores when scaling is off); mask; masked (mask added); weights = softmax(masked);
        output = weights v (n, hs). Computed by the same function the encoder uses."""
        if not 0 <= layer < self.n_layers or not 0 <= head < self.n_heads:
            raise IndexError(f"layer/head out of range: {self.n_layers} layers x {self.n_heads} heads")
        enc = self.encode(text, max_tokens)
        p = self.layers()[layer]
        with self.gate.interactive(), torch.inference_mode():
            x = self.hidden_states(enc.inputs)[layer][0]  # (n, d)
            sl = slice(head * p.head_dim, (head + 1) * p.head_dim)
            q, k, v = p.query(x)[:, sl], p.key(x)[:, sl], p.value(x)[:, sl]  # (n, hs)
            n = x.shape[0]
            mask = causal_mask(n, x.dtype, x.device) if p.causal else torch.zeros(n, n, dtype=x.dtype)
            recorded: dict[str, torch.Tensor] = {}
            out, _ = scaled_dot_product_attention(q, k, v, mask, p.scale, steps=recorded)
        arrays = {"x": x, "q": q, "k": k, "v": v, "mask": mask, "output": out, **recorded}
        return {name: t.float().cpu().numpy() for name, t in arrays.items()}

    def trace(self, inputs: Inputs) -> tuple[np.ndarray, list[dict[str, torch.Tensor]]]:
        """One real forward of a batch of one, recorded: the weights (L, H, n, n) float32 and,
        per layer, "x" (n, d) the input of the value projection, "values" x W_V + b_V
        (n, H * hs) and "attn_out" (n, d) what the output projection returned (before dropout,
        residual and LayerNorm). Caller picks the grad mode."""
        return traced(self.name, self.layers(), lambda: self.attention_array(inputs))

    def layer_trace(self, inputs: Inputs, layer: int, **kwargs: torch.Tensor) -> dict[str, torch.Tensor]:
        """Recompute one layer from its input with the project's attention and return what
        `post_ln_layer` records (values, context, attn_out, mid, ff, out) plus "x" and
        "weights". kwargs go to `post_ln_layer` (value_scale). Caller picks the grad mode."""
        x = self.hidden_states(inputs)[layer]
        trace: dict[str, torch.Tensor] = {"x": x}
        _, weights = post_ln_layer(self.layers()[layer], x, inputs.get("attention_mask"), trace=trace, **kwargs)
        trace["weights"] = weights
        return trace

    @contextlib.contextmanager
    def switch_heads(
        self, heads: Iterable[tuple[int, int]] = (), mode: HeadMode = "zero", gates: torch.Tensor | None = None
    ) -> Iterator[None]:
        """Run the real model with heads switched off while inside: each listed (layer, head)'s
        slice of the context (the heads side by side, before the output projection; Michel et
        al. 2019) is zeroed, or replaced by its mean over positions (mode "mean"). `gates`
        (L, H), or (B, L, H) for one set per batch row, sets every head's slice to
        base + gate * (slice - base): gate 1 keeps a head, 0 switches it off, gradients reach the
        gates. Hooks on the output projections act for the calling thread only (another
        visitor's pass meanwhile sees the whole model) and are removed on leaving."""
        off = heads_by_layer(heads, self.n_layers, self.n_heads, mode)
        parts = projection_parts(self)
        with self._switch_lock, contextlib.ExitStack() as stack:
            for layer, p in enumerate(parts):
                if layer in off or gates is not None:
                    hook = head_switch(p, off.get(layer, []), mode, None if gates is None else gates[..., layer, :])
                    stack.callback(p.output.register_forward_pre_hook(hook).remove)
            yield

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, device={str(self.device)!r})"
