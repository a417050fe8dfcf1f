"""A trained tiny decoder behind the Runner seam, with a tokenizer over its own vocabulary:
symbol tasks split on whitespace ("t03 t17 > t03"), the text task reads one character a token,
`<s>` in front as in training. Not a post-LayerNorm encoder: `layers()` raises ValueError, so the
methods that decompose a BERT layer answer "not available"; maps, hidden states, gradients and
head switches (through `prenorm_layers`) work.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, cast

import torch

from ..models.base import Encoded, Inputs, RunnerBase
from ..models.prenorm_parts import NoFeedForward, PreNormParts
from ..scratch import LayerParts
from .model import DecoderLayer, TinyDecoder
from .tasks import BOS, PAD, SPECIALS, UNK, Task

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast


def build_tokenizer(vocab: list[str], char_level: bool, max_len: int) -> PreTrainedTokenizerFast:
    """A fast tokenizer whose ids are the positions in `vocab` (specials first), `<s>` prepended:
    the quick tokenizer (models/minilm_numpy.py) for one text at a time, transformers'
    `PreTrainedTokenizerFast` built on the first other need (so training never imports transformers)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors

    from ..models.minilm_numpy import QuickTokenizer

    if list(vocab[: len(SPECIALS)]) != list(SPECIALS):
        raise ValueError(f"a vocabulary starts with {SPECIALS}")
    ids = {tok: i for i, tok in enumerate(vocab)}
    tok = Tokenizer(models.WordLevel(ids, unk_token=UNK))
    tok.pre_tokenizer = (  # one token a code point, whitespace included; or a whitespace-separated word
        pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated") if char_level else pre_tokenizers.WhitespaceSplit()
    )
    tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, ids[BOS])])
    real: list[PreTrainedTokenizerFast] = []
    lock = threading.Lock()

    def full() -> PreTrainedTokenizerFast:
        with lock:
            if not real:
                from transformers import PreTrainedTokenizerFast

                real.append(
                    PreTrainedTokenizerFast(  # it works on its own copy of `tok`
                        tokenizer_object=tok, unk_token=UNK, pad_token=PAD, bos_token=BOS, model_max_length=max_len
                    )
                )
            return real[0]

    return cast("PreTrainedTokenizerFast", QuickTokenizer(tok, full, max_len, UNK, PAD))


class TrainedModel(RunnerBase):
    """A `TinyDecoder` trained on one task. `attend(text)` like any other model."""

    causal = True

    def __init__(self, decoder: TinyDecoder, task: Task, name: str, device: torch.device | None = None):
        max_len = decoder.cfg.max_len
        tokenizer = build_tokenizer(task.vocab, task.char_level, max_len)
        super().__init__(tokenizer, device or torch.device("cpu"), max_len, max_len)
        self.name = name
        self.decoder = decoder
        self.task = task
        self.config = decoder.cfg
        self.n_layers = decoder.cfg.n_layers
        self.n_heads = decoder.cfg.n_heads

    def encode(self, text: str, max_tokens: int | None = None) -> Encoded:
        """As `RunnerBase.encode`, and a readable error when no token of the text is in the
        vocabulary (an English sentence given to a model trained on symbols, say)."""
        enc = super().encode(text, max_tokens)
        ids = enc.inputs["input_ids"][0]
        if bool((ids[~torch.as_tensor(enc.special)] == self.tokenizer.unk_token_id).all()):
            sample = " ".join(self.task.vocab[len(SPECIALS) : len(SPECIALS) + 4])
            raise ValueError(
                f"no token of this text is in the vocabulary of '{self.name}' (it reads tokens like {sample} …)"
            )
        return enc

    def attention_maps(self, inputs: Inputs) -> list[torch.Tensor]:
        return self.decoder.run(inputs["input_ids"], inputs.get("attention_mask"))[1]

    def last_hidden(self, inputs: Inputs, inputs_embeds: torch.Tensor | None = None) -> torch.Tensor:
        ids = None if inputs_embeds is not None else inputs["input_ids"]
        states, _ = self.decoder.run(ids, inputs.get("attention_mask"), inputs_embeds)
        return states[-1]

    def hidden_states(self, inputs: Inputs) -> list[torch.Tensor]:
        return self.decoder.run(inputs["input_ids"], inputs.get("attention_mask"))[0]

    def input_embeddings(self) -> torch.nn.Embedding:
        return self.decoder.token_embeddings

    def layers(self) -> list[LayerParts]:
        raise ValueError(
            f"model '{self.name}' is a pre-LayerNorm decoder trained here, not a BERT-family encoder: "
            "methods that decompose a BERT layer do not apply to it"
        )

    def prenorm_layers(self) -> list[PreNormParts]:
        """Each block (training/model.py: x + Attn(LayerNorm(x)), then x + MLP(x), MLP optional) as
        the parts of a pre-norm layer: no norm before the MLP, an attention-only block's MLP adds nothing."""
        out = []
        for block in self.decoder.layers:
            assert isinstance(block, DecoderLayer)
            a = block.attention
            mlp = block.mlp if block.mlp is not None else NoFeedForward()
            parts = (block.ln_attention, a.query, a.key, a.value, a.output, torch.nn.Identity(), mlp)
            out.append(PreNormParts(*parts, a.n_heads, a.n_heads, a.head_dim))
        return out
