"""Hugging Face models (BERT, DistilBERT, RoBERTa, GPT-2, ...) behind the Runner seam: loaded
with eager attention (SDPA, transformers 5's default, returns no weights) in eval mode
(loading.py), run under inference mode. The only module that knows a Hugging Face model's
module tree (`layers()`, `prenorm_layers()`)."""

from __future__ import annotations

import contextlib
import functools
import operator
import threading
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..result import Attention
from ..scratch import BERT_LAYER_PATHS, LayerParts, scaled_dot_product_attention
from .base import Encoded, Inputs, ModelLoadError, RunnerBase
from .prenorm_parts import PreNormParts
from .threads import this_thread
from .tokens import model_limit

if TYPE_CHECKING:
    from transformers import PreTrainedModel as HFModel
    from transformers import PreTrainedTokenizerBase

CAUSAL_TYPES = {"gpt2", "gpt_neo", "gpt_neox", "gptj", "llama", "mistral", "qwen2", "opt", "bloom", "phi", "gemma"}


class PretrainedModel(RunnerBase):
    """A Hugging Face encoder or decoder."""

    def __init__(
        self,
        name: str,
        hf_model: HFModel,
        tokenizer: PreTrainedTokenizerBase,
        device: torch.device,
        max_tokens: int,
        lm_head: torch.nn.Module | None = None,
    ):
        cfg = hf_model.config
        if getattr(tokenizer, "pad_token", None) is None and getattr(tokenizer, "eos_token", None) is not None:
            tokenizer.pad_token = tokenizer.eos_token  # GPT-2 style: only needed for batching
        super().__init__(tokenizer, device, max_tokens, model_limit(tokenizer, cfg))
        self.name = name
        self.hf_model = hf_model
        self.config = cfg
        self.n_layers = int(_first_attr(cfg, "num_hidden_layers", "n_layer", "n_layers"))
        self.n_heads = int(_first_attr(cfg, "num_attention_heads", "n_head", "n_heads"))
        self.causal = bool(getattr(cfg, "is_decoder", False)) or cfg.model_type in CAUSAL_TYPES
        n_kv = int(getattr(cfg, "num_key_value_heads", None) or self.n_heads)
        if self.n_heads % n_kv:
            raise ModelLoadError(f"{self.n_heads} query heads cannot share {n_kv} key/value heads evenly")
        # query head h reads key/value head h // (H / KV), as transformers' repeat_kv lays them out
        self.kv_heads = np.arange(self.n_heads) // (self.n_heads // n_kv)
        self.lm_head = lm_head  # the unembedding of a causal LM (hf_model is then its base model)
        self.writes_in_place = _use_in_place_attention(hf_model)
        self._layers: list[LayerParts] | None = None

    def attend(self, text: str, max_tokens: int | None = None, *, pair: str | None = None) -> Attention:
        """As `RunnerBase.attend`; `pair`: a second text B, read with `text` as "[CLS] A [SEP] B [SEP]"
        with segment ids (an encoder only; the result's `segments` says which text a token is in)."""
        if pair is None:
            return super().attend(text, max_tokens)
        from .pairs import attend_pair

        return attend_pair(self, text, pair, max_tokens)

    def attention_maps(self, inputs: Inputs) -> list[torch.Tensor]:
        out = self.hf_model(**inputs, output_attentions=True, return_dict=True)
        return list(out.attentions or [])

    def attention_array(self, inputs: Inputs) -> np.ndarray:
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

    def last_hidden(self, inputs: Inputs, inputs_embeds: torch.Tensor | None = None) -> torch.Tensor:
        if inputs_embeds is None:
            return self.hf_model(**inputs, return_dict=True).last_hidden_state
        rest = {k: v for k, v in inputs.items() if k != "input_ids"}
        return self.hf_model(**rest, inputs_embeds=inputs_embeds, return_dict=True).last_hidden_state

    def hidden_states(self, inputs: Inputs) -> list[torch.Tensor]:
        return list(self.hf_model(**inputs, output_hidden_states=True, return_dict=True).hidden_states)

    def input_embeddings(self) -> torch.nn.Embedding:
        table = self.hf_model.get_input_embeddings()
        assert isinstance(table, torch.nn.Embedding)
        return table

    def residual_logits(
        self, text: str, position: int = -1, max_tokens: int | None = None
    ) -> tuple[Encoded, np.ndarray]:
        enc = self.encode(text, max_tokens)
        base = self.hf_model  # a causal LM's base model: its final norm and decoder blocks
        norm = next((getattr(base, a) for a in ("norm", "ln_f", "final_layer_norm") if hasattr(base, a)), None)
        blocks = next((getattr(base, a) for a in ("layers", "h") if hasattr(base, a)), None)
        if self.lm_head is None or norm is None or blocks is None:
            raise ValueError(_NO_HEAD.format(name=self.name))
        n = int(enc.inputs["input_ids"].shape[1])
        if not -n <= position < n:
            raise IndexError(f"position {position} out of range for {n} tokens")
        pos = position % n
        rows: list[torch.Tensor] = []

        @this_thread
        def keep(_m: torch.nn.Module, _args: tuple[Any, ...], out: Any) -> None:
            rows.append((out[0] if isinstance(out, tuple) else out)[0, pos])

        with self.gate.interactive(), torch.inference_mode(), contextlib.ExitStack() as stack:
            for block in list(blocks)[: self.n_layers]:
                stack.callback(block.register_forward_hook(keep).remove)
            self.hf_model(**enc.inputs, return_dict=True)
            if len(rows) != self.n_layers:
                raise ModelLoadError(f"model '{self.name}' did not run each of its {self.n_layers} layers once")
            assert self.lm_head is not None
            logits = self.lm_head(norm(torch.stack(rows)))  # (L, vocab)
        return enc, logits.float().cpu().numpy()

    def next_token_logits(self, text: str, max_tokens: int | None = None) -> np.ndarray:
        enc = self.encode(text, max_tokens)
        if self.lm_head is None:
            raise ValueError(_NO_HEAD.format(name=self.name))
        with self.gate.interactive(), torch.inference_mode():
            hidden = self.hf_model(**enc.inputs, return_dict=True).last_hidden_state[0, -1]
            return self.lm_head(hidden).float().cpu().numpy()

    def unembed(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.lm_head is None:
            raise ValueError(_NO_HEAD.format(name=self.name))
        return self.lm_head(hidden)

    def vocab_strings(self, ids: list[int]) -> list[str]:
        return [vocab_string(self.tokenizer, i) for i in ids]

    def layers(self) -> list[LayerParts]:
        if self._layers is None:
            self._layers = _layer_parts(self.hf_model, self.name)
        return self._layers

    def prenorm_layers(self) -> list[PreNormParts]:
        """A Llama-family model's layers (`model.layers[i]`: input_layernorm, self_attn.{q,k,v,o}_proj,
        post_attention_layernorm, mlp)."""
        hf = self.hf_model
        cfg: Any = getattr(hf, "config", None)
        kind = getattr(cfg, "model_type", type(hf).__name__)
        layers = getattr(getattr(hf, "base_model", hf), "layers", None)
        if kind not in PRENORM_TYPES or layers is None:
            raise ValueError(
                f"this needs a pre-norm decoder of the Llama family (Llama, Mistral, Qwen2, SmolLM2); "
                f"model '{self.name}' ({kind}) has another layout"
            )
        n_heads = int(cfg.num_attention_heads)
        n_kv = int(getattr(cfg, "num_key_value_heads", None) or n_heads)
        out = []
        for layer in layers[: int(cfg.num_hidden_layers)]:
            a = layer.self_attn
            head_dim = a.q_proj.weight.shape[0] // n_heads
            parts = (layer.input_layernorm, a.q_proj, a.k_proj, a.v_proj, a.o_proj, layer.post_attention_layernorm)
            out.append(PreNormParts(*parts, layer.mlp, n_heads, n_kv, head_dim))
        return out


_NO_HEAD = "model '{name}' has no language-model head: the next word needs a decoder such as 'smollm2'"


def vocab_string(tokenizer: Any, token_id: int) -> str:
    """A vocabulary entry as text; one that holds part of a character shows its bytes (<0xE4>)."""
    s = str(tokenizer.decode([int(token_id)]))
    if "\ufffd" not in s:
        return s
    raw = tokenizer.convert_ids_to_tokens(int(token_id))
    table = _byte_decoder()
    if isinstance(raw, str) and all(c in table for c in raw):
        return "".join(f"<0x{table[c]:02X}>" for c in raw)
    return s


@functools.cache
def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet: the byte each printable character stands for."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return {c: b for b, c in bytes_to_unicode().items()}


def _layer_parts(hf: Any, name: str) -> list[LayerParts]:
    """BERT-family (BERT, RoBERTa, ELECTRA, MiniLM) and DistilBERT layers as LayerParts."""
    base = getattr(hf, "base_model", hf)
    bert_layers = getattr(getattr(base, "encoder", None), "layer", None)
    distil_layers = getattr(getattr(base, "transformer", None), "layer", None)
    try:
        if bert_layers is not None:
            return [_parts(x, BERT_LAYER_PATHS, int(x.attention.self.num_attention_heads)) for x in bert_layers]
        if distil_layers is not None and getattr(hf.config, "model_type", "") == "distilbert":
            return [_parts(x, _DISTILBERT_PARTS, int(x.attention.n_heads)) for x in distil_layers]
    except AttributeError:
        pass
    kind = getattr(getattr(hf, "config", None), "model_type", type(hf).__name__)
    raise ValueError(
        f"this needs a BERT-family encoder (BERT, RoBERTa, ELECTRA, MiniLM, DistilBERT) or the scratch "
        f"encoder; model '{name}' ({kind}) has another layout"
    )


# model types whose decoder layer is exactly x + attn(norm(x)), then + mlp(norm(.)); Gemma 2/3
# add norms after each block and are not listed
PRENORM_TYPES = {"llama", "mistral", "qwen2", "qwen3", "smollm3"}


# Where each part of a post-LN layer lives in DistilBERT: LayerParts field -> attribute path
# (BERT's: scratch.BERT_LAYER_PATHS).
_DISTILBERT_PARTS = {
    "query": "attention.q_lin",
    "key": "attention.k_lin",
    "value": "attention.v_lin",
    "output": "attention.out_lin",
    "ln_attention": "sa_layer_norm",
    "ff_in": "ffn.lin1",
    "ff_out": "ffn.lin2",
    "ln_ff": "output_layer_norm",
    "activation": "ffn.activation",
}


def _parts(layer: Any, paths: dict[str, str], n_heads: int) -> LayerParts:
    found = {name: operator.attrgetter(path)(layer) for name, path in paths.items()}
    head_dim = found["query"].weight.shape[0] // n_heads
    return LayerParts(**found, n_heads=n_heads, head_dim=head_dim)


def _first_attr(obj: object, *names: str) -> Any:
    for n in names:
        if getattr(obj, n, None) is not None:
            return getattr(obj, n)
    raise ModelLoadError(f"config has none of {names}")


# --- Eager attention written straight into the result array -----------------------------------
# transformers' eager attention allocates every layer's weights and `attend` would copy them into
# one array (75 MB at 512 tokens of a 6 x 12 model). Where the attention is the generic eager
# function (modeling_bert.eager_attention_forward), the project's own attention is registered
# instead, computing the weights in place inside a slice of the caller's numpy array.
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
    w = slots.pop(0)  # (1, H, n, n) view of the result array
    scale: bool | float = True if scaling is None else float(scaling)
    out, w = scaled_dot_product_attention(query, key, value, attention_mask, scale, out=w)
    return out.transpose(1, 2).contiguous(), w  # (1, n, H, hs)


def _use_in_place_attention(hf_model: Any) -> bool:
    if hf_model.config.model_type not in _IN_PLACE_TYPES:
        return False
    try:
        from transformers import AttentionInterface, AttentionMaskInterface
        from transformers.masking_utils import eager_mask

        AttentionInterface.register(_IN_PLACE_NAME, _eager_in_place)
        # the additive float mask eager attention expects (a name transformers does not know
        # would get SDPA's boolean mask, which breaks padded batches)
        AttentionMaskInterface.register(_IN_PLACE_NAME, eager_mask)
        hf_model.set_attn_implementation(_IN_PLACE_NAME)
    except Exception:  # an older or newer transformers without this hook: plain eager + copy
        return False
    return bool(hf_model.config._attn_implementation == _IN_PLACE_NAME)
