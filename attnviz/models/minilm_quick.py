"""The embedded MiniLM without transformers until something needs it (importing transformers'
BERT code costs more than torch itself: bench/results_coldstart.md).

`QuickMiniLM` answers `attend`, padded batches, `trace` and gradient-free `last_hidden` with the
scratch encoder (attnviz/scratch.py) carrying model.safetensors' weights, writing each layer's
weights straight into the result array. The first need of anything else loads the Hugging Face
runner, which answers everything from then on (the quick encoder is freed).
tests/test_coldstart_quick.py holds the two paths equal (1e-5).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch

from ..scratch import EncoderConfig, EncoderLayer, ScratchEncoder, padding_mask, scaled_dot_product_attention
from .base import Inputs, LayerParts, RunnerBase, traced
from .huggingface import PretrainedModel
from .minilm_numpy import QuickTokenizer, bert_config
from .names import EMBEDDED_MODEL

if TYPE_CHECKING:
    from transformers import PreTrainedModel as HFModel


def quick_attention(encoder: ScratchEncoder, inputs: Inputs, out: np.ndarray | None = None) -> np.ndarray:
    """Every layer's attention of a batch of one, computed in `out` (L, H, n, n) float32 (a new
    array when None), as transformers' BertModel computes it in eval mode."""
    if out is None:
        n = int(inputs["input_ids"].shape[1])
        out = np.empty((encoder.cfg.n_layers, encoder.cfg.n_heads, n, n), dtype=np.float32)
    _run(encoder, inputs, torch.from_numpy(out).unsqueeze(1).unbind(0))  # L views of (1, H, n, n)
    return out


def _run(encoder: ScratchEncoder, inputs: Inputs, slots: Sequence[torch.Tensor | None]) -> torch.Tensor:
    """The forward pass, each layer's weights written into its slot (None: a tensor of its own);
    the last layer's output (B, n, d)."""
    ids = inputs["input_ids"]
    segments = inputs.get("token_type_ids")
    if segments is None:
        segments = torch.zeros_like(ids)
    # BertEmbeddings' order of the sums (the scratch encoder adds positions first): bit for bit
    x = encoder.word_embeddings(ids) + encoder.token_type_embeddings(segments)
    x = encoder.ln_embeddings(x + encoder.position_embeddings(torch.arange(ids.shape[1], device=ids.device))[None])
    keep = inputs.get("attention_mask")
    mask = None if keep is None or bool(keep.all()) else padding_mask(keep, x.dtype)
    B, T, _ = x.shape
    for layer, slot in zip(encoder.layers, slots, strict=True):
        p = cast(EncoderLayer, layer).parts()
        q, k, v = (t.view(B, T, p.n_heads, p.head_dim).transpose(1, 2) for t in (p.query(x), p.key(x), p.value(x)))
        y, _ = scaled_dot_product_attention(q, k, v, mask, out=slot)  # (B, H, T, hs)
        attn = p.output(y.transpose(1, 2).reshape(B, T, p.n_heads * p.head_dim))
        mid = p.ln_attention(x + attn)
        x = p.ln_ff(mid + p.ff_out(p.activation(p.ff_in(mid))))
    return x


def scratch_config(folder: Path, **switches: bool) -> EncoderConfig:
    """A BERT config.json (`bert_config`: GELU, or refused) as the scratch encoder's config
    (`switches`: its extra fields)."""
    c = bert_config(folder)
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


class QuickMiniLM(PretrainedModel):
    """The embedded MiniLM (a `PretrainedModel`): `attend` through the quick encoder until the
    Hugging Face model is loaded, on the first need of anything else (`full` loads it)."""

    post_ln_encoder = True  # its `layers()` are a BERT encoder's: known before they are loaded

    def __init__(self, folder: Path, device: torch.device, max_tokens: int, full: Callable[[], PretrainedModel]):
        from safetensors.torch import load_file

        cfg = scratch_config(folder)
        self._full_loader = full
        self._full: PretrainedModel | None = None
        self._full_lock = threading.RLock()
        tokenizer = QuickTokenizer.from_folder(folder, lambda: self.loaded().tokenizer)
        RunnerBase.__init__(
            self, cast(Any, tokenizer), device, max_tokens, min(tokenizer.model_max_length, cfg.max_positions)
        )
        self.name = EMBEDDED_MODEL
        self.n_layers, self.n_heads = cfg.n_layers, cfg.n_heads
        self.kv_heads = np.arange(cfg.n_heads)  # every head its own keys and values
        self.lm_head = None
        self._layers = None
        encoder = ScratchEncoder.from_bert_state_dict(load_file(str(folder / "model.safetensors")), cfg)
        self.quick: ScratchEncoder | None = encoder.eval().to(device)

    def loaded(self) -> PretrainedModel:
        """The Hugging Face runner, loaded once on first need."""
        with self._full_lock:
            if self._full is None:
                # often first needed inside a pass (inference mode): its weights must still be
                # ordinary tensors, or a later gradient through them fails
                with torch.inference_mode(False):
                    full = self._full_loader()
                self.tokenizer = full.tokenizer
                self._full = full
                self.quick = None  # every pass is the Hugging Face model's now
            return self._full

    @property
    def hf_model(self) -> HFModel:
        return self.loaded().hf_model

    @property
    def config(self) -> Any:
        return self.loaded().config

    @property
    def writes_in_place(self) -> bool:  # type: ignore[override]
        return self.loaded().writes_in_place

    def attend_layers(self) -> list[LayerParts]:
        """The layers `attend` runs through now (no load for this): the quick encoder's, or once the
        full model is loaded, the Hugging Face model's (explain/value_norms.py hooks them)."""
        quick = self.quick
        if quick is None:
            return self.layers()
        return [cast(EncoderLayer, layer).parts() for layer in quick.layers]

    def attention_maps(self, inputs: Inputs) -> list[torch.Tensor]:
        """A padded batch's (B, w) attention (a corpus run) through the quick encoder while there is
        one: a (B, H, w, w) float32 tensor a layer, padding columns weighted 0, as eager BERT's."""
        quick = self.quick
        if quick is None:
            return super().attention_maps(inputs)
        B, w = inputs["input_ids"].shape
        slots = [torch.empty(B, self.n_heads, w, w, device=inputs["input_ids"].device) for _ in quick.layers]
        _run(quick, inputs, slots)
        return slots

    def last_hidden(self, inputs: Inputs, inputs_embeds: torch.Tensor | None = None) -> torch.Tensor:
        """Through the quick encoder while there is one and no gradient is asked for."""
        quick = self.quick
        if quick is None or inputs_embeds is not None or torch.is_grad_enabled():
            return super().last_hidden(inputs, inputs_embeds)
        return _run(quick, inputs, [None] * len(quick.layers))

    def trace(self, inputs: Inputs) -> tuple[np.ndarray, list[dict[str, torch.Tensor]]]:
        """`Runner.trace` through the quick encoder while there is one; its layers and its pass are
        taken together, so a full load meanwhile cannot part them."""
        quick = self.quick
        if quick is None or int(inputs["input_ids"].shape[0]) != 1:
            return super().trace(inputs)
        parts = [cast(EncoderLayer, layer).parts() for layer in quick.layers]
        return traced(self.name, parts, lambda: quick_attention(quick, inputs))

    def attention_array(self, inputs: Inputs) -> np.ndarray:
        quick = self.quick
        if quick is None or int(inputs["input_ids"].shape[0]) != 1:
            return super().attention_array(inputs)
        return quick_attention(quick, inputs)
