"""`load_model`: the embedded MiniLM, the from-scratch encoder, a Hugging Face id or a local folder."""

from __future__ import annotations

import re
import threading
from dataclasses import replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Literal, cast

import torch

from ..scratch import ScratchEncoder
from . import hub
from .base import ModelLoadError
from .e5 import load_e5_runner
from .gate import gate_for
from .huggingface import PretrainedModel
from .minilm_numpy import QuickTokenizer, embedded_model_dir
from .minilm_quick import QuickMiniLM, scratch_config
from .names import E5_MODEL, EMBEDDED_MODEL, SMOLLM2_MODEL, check_model_name
from .scratch_runner import ScratchModel
from .smollm2 import load_smollm2
from .tokens import DEFAULT_MAX_TOKENS

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}(/[\w.-]{1,96})?$")


def resolve_device(device: str = "auto") -> torch.device:
    """`auto` picks CUDA, then Apple MPS, then CPU; `cpu`/`cuda`/`cuda:N`/`mps` force one."""
    device = (device or "auto").strip().lower()
    mps = getattr(torch.backends, "mps", None)
    has_mps = mps is not None and mps.is_available()
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "mps" if has_mps else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was requested but no CUDA GPU is available here; use 'cpu' or 'auto'")
    if device == "mps" and not has_mps:
        raise ValueError("device 'mps' was requested but Apple MPS is not available here; use 'cpu' or 'auto'")
    try:
        return torch.device(device)
    except RuntimeError as exc:
        raise ValueError(f"unknown device {device!r}: use auto, cpu, cuda or mps") from exc


# One model load at a time in a process: neither transformers' first import nor from_pretrained
# (which patches torch.nn.Module globally to build on the meta device) is thread-safe. Loads are
# rare, so waiting for one another costs little.
_LOAD_LOCK = threading.RLock()


def _import_transformers() -> None:
    with _LOAD_LOCK:
        import transformers

        for name in ("AutoConfig", "AutoModel", "AutoTokenizer", "BertConfig", "BertModel"):
            getattr(transformers, name)


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
) -> PretrainedModel | ScratchModel:
    """Load a model by name: `minilm` (embedded, offline), `e5-small` (multilingual, embedded,
    offline), `scratch` (from-scratch encoder carrying MiniLM's weights, or random ones), a
    Hugging Face id, or a local directory.

    `scale`, `positions`, `causal`, `weights` and `seed` apply to `scratch` only.
    Raises ValueError for bad arguments and ModelLoadError when a model cannot be loaded.
    """
    name = check_model_name(name)
    dev = resolve_device(device)
    if max_tokens < 2:
        raise ValueError("max_tokens must be at least 2")
    if weights not in ("pretrained", "random"):
        raise ValueError("weights must be 'pretrained' or 'random'")
    options = {"scale": scale, "positions": positions, "causal": causal, "weights": weights, "seed": seed}
    runner: PretrainedModel | ScratchModel
    with _LOAD_LOCK:  # one load at a time in a process (see _LOAD_LOCK)
        if name in (E5_MODEL, SMOLLM2_MODEL) or (name == EMBEDDED_MODEL and dev.type != "cpu"):
            _import_transformers()  # a hub id is checked first (_load_hf: refused before transformers)
        if name == "scratch":
            runner = _load_scratch(dev, scale, positions, causal, weights, seed, max_tokens)
        elif name == EMBEDDED_MODEL:  # on the CPU: transformers only on first need (models/minilm_quick.py)
            full = partial(_load_hf, str(embedded_model_dir()), dev, max_tokens, EMBEDDED_MODEL)
            runner = QuickMiniLM(embedded_model_dir(), dev, max_tokens, full) if dev.type == "cpu" else full()
        elif name == E5_MODEL:
            runner = load_e5_runner(dev, max_tokens)
        elif name == SMOLLM2_MODEL:
            runner = load_smollm2(dev, max_tokens)
        else:
            runner = _load_hf(name, dev, max_tokens, display_name=name)
    # one gate per model and device for the life of the process, whoever loads it again
    runner.gate = gate_for((runner.name, str(dev), tuple(sorted(options.items())) if name == "scratch" else ()))
    if dev.type != "cpu":
        runner._reload = partial(load_model, name, "cpu", max_tokens=max_tokens, **options)  # type: ignore[arg-type]
    return runner


def _load_hf(path_or_id: str, device: torch.device, max_tokens: int, display_name: str) -> PretrainedModel:
    local = Path(path_or_id).expanduser()
    is_dir = local.is_dir()
    looks_like_path = path_or_id.startswith((".", "/", "~", "\\")) or path_or_id.count("/") > 1
    hidden = (
        f"could not load model '{display_name}': it is not a model this server can load. Choose one from the list, "
        f"or ask whoever runs this server to add it"
    )
    if not is_dir and (looks_like_path or local.exists()):
        raise ModelLoadError(f"model directory '{display_name}' does not exist", public=hidden)
    if not is_dir and not _HUB_ID.match(path_or_id):
        raise ModelLoadError(
            f"'{display_name}' is neither a local model directory nor a Hugging Face model id", public=hidden
        )
    source = str(local) if is_dir else path_or_id
    try:
        # under the load lock itself: the quick MiniLM's full load comes outside load_model
        with _LOAD_LOCK, hub.prepare(source):
            _import_transformers()
            from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

            config = AutoConfig.from_pretrained(source, trust_remote_code=False)
            tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=False)
            # a checkpoint saved with its language-model head loads as a causal LM
            causal = any(str(a).endswith(("ForCausalLM", "LMHeadModel")) for a in config.architectures or ())
            model = (AutoModelForCausalLM if causal else AutoModel).from_pretrained(
                source, config=config, attn_implementation="eager", trust_remote_code=False, dtype=torch.float32
            )
    except Exception as exc:  # transformers raises OSError, ValueError, HF hub errors...
        message = hub.load_failure(display_name, is_dir, exc)
        raise ModelLoadError(message, public=hidden if is_dir else message) from exc
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(f"model '{display_name}' has no fast tokenizer, which attnviz needs for word alignment")
    model.eval().to(device)
    lm_head = None
    if model is not model.base_model:  # a causal LM: attention from its base, the next word from its head
        lm_head, model = model.get_output_embeddings(), model.base_model
    return PretrainedModel(display_name, model, tokenizer, device, max_tokens, lm_head=lm_head)


def _load_scratch(
    device: torch.device, scale: bool, positions: bool, causal: bool, weights: str, seed: int, max_tokens: int
) -> ScratchModel:
    folder = embedded_model_dir()
    # MiniLM's tokenizer.json through the `tokenizers` library: the scratch model tokenises without
    # importing transformers' BERT code (seconds); transformers' tokenizer loads on a first need.
    tokenizer = QuickTokenizer.from_folder(folder, _hf_tokenizer)
    cfg = scratch_config(folder, scale=scale, positions=positions, causal=causal)
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
    return ScratchModel(encoder, cast(Any, tokenizer), device, max_tokens, name)


@lru_cache(maxsize=1)
def _hf_tokenizer() -> Any:
    """transformers' tokenizer of the embedded model, loaded once per process on first need."""
    with _LOAD_LOCK:
        _import_transformers()
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(embedded_model_dir()))


@lru_cache(maxsize=1)
def _embedded_state_dict() -> dict[str, torch.Tensor]:
    """MiniLM's weights, read once per process and shared (read-only) by every scratch
    encoder: the lab's switch variants would otherwise hold 90 MB each."""
    from safetensors.torch import load_file

    return load_file(str(embedded_model_dir() / "model.safetensors"))
