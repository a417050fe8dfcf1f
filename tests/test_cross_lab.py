"""`attnviz.lab.cross_attention`: queries from X, keys and values from Y, through each layer of
the scratch encoder (MiniLM's weights) and the pretrained MiniLM; with Y = X it is self-attention."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnviz
from attnviz.lab import cross_attention, cross_steps, max_abs_diff
from attnviz.scratch import EncoderConfig, ScratchEncoder

X = "The animal didn't cross the street because it was tired."
Y = "Le chat est sur le tapis."


def test_cross_with_y_equal_x_is_self_attention(scratch: attnviz.ScratchModel) -> None:
    att = cross_attention(scratch, X, X)
    assert att.cross and att.keys == att.tokens
    assert max_abs_diff(att.weights, scratch.attend(X).weights) < 1e-6


def test_cross_with_y_equal_x_on_the_pretrained_model(minilm: attnviz.PretrainedModel) -> None:
    """Transformers' own layers make the hidden states here, in another order of float32 operations
    than the in-place attention `attend` reads (1.1e-6 apart at most on this sentence)."""
    assert max_abs_diff(cross_attention(minilm, X, X).weights, minilm.attend(X).weights) < 1e-5


def test_cross_shape_rows_and_tokens(scratch: attnviz.ScratchModel) -> None:
    att = cross_attention(scratch, X, Y)
    nx, ny = len(scratch.encode(X).tokens), len(scratch.encode(Y).tokens)
    assert att.weights.shape == (scratch.n_layers, scratch.n_heads, nx, ny)
    assert att.tokens == scratch.encode(X).tokens and att.keys == scratch.encode(Y).tokens
    np.testing.assert_allclose(att.weights.sum(-1), 1.0, atol=1e-5)


def test_cross_first_layer_by_hand(scratch: attnviz.ScratchModel) -> None:
    """Layer 0 by hand: the embeddings of each text, W_Q on X's, W_K on Y's, softmax."""
    ex, ey = scratch.encode(X), scratch.encode(Y)
    enc = scratch.encoder
    p = scratch.layers()[0]
    with torch.inference_mode():
        hx = enc.embed(ex.inputs["input_ids"], ex.inputs.get("token_type_ids"))[0].double()
        hy = enc.embed(ey.inputs["input_ids"], ey.inputs.get("token_type_ids"))[0].double()
        wq, bq = p.query.weight.double(), p.query.bias.double()
        wk, bk = p.key.weight.double(), p.key.bias.double()
        h, hs = 3, p.head_dim
        q = (hx @ wq.T + bq)[:, h * hs : (h + 1) * hs]
        k = (hy @ wk.T + bk)[:, h * hs : (h + 1) * hs]
        want = torch.softmax(q @ k.T / hs**0.5, dim=-1).numpy()
    np.testing.assert_allclose(cross_attention(scratch, X, Y).weights[0, h], want, atol=1e-5)


def test_cross_steps_match_the_walk_when_y_is_x(scratch: attnviz.ScratchModel) -> None:
    mine, walk = cross_steps(scratch, X, X, layer=2, head=5), scratch.steps(X, layer=2, head=5)
    for name in ("q", "k", "v", "scores", "weights", "output"):
        assert max_abs_diff(mine[name], walk[name]) < 1e-6, name
    other = cross_steps(scratch, X, Y, layer=1, head=0)
    assert other["scores"].shape == (len(scratch.encode(X).tokens), len(scratch.encode(Y).tokens))
    np.testing.assert_allclose(other["weights"], cross_attention(scratch, X, Y).weights[1, 0], atol=1e-6)
    with pytest.raises(IndexError):
        cross_steps(scratch, X, Y, layer=99)


def test_causal_cross_with_y_equal_x_is_causal_self_attention() -> None:
    from attnviz.models import ScratchModel

    tok = attnviz.load_model("scratch", device="cpu").tokenizer
    torch.manual_seed(0)
    enc = ScratchEncoder(EncoderConfig(n_layers=2, n_heads=2, d_model=32, d_ff=64, causal=True))
    model = ScratchModel(enc, tok, torch.device("cpu"), 64, "tiny causal")
    att = cross_attention(model, X, X)
    assert max_abs_diff(att.weights, model.attend(X).weights) < 1e-6
    assert np.allclose(np.triu(att.weights[1, 1], 1), 0.0)


def test_a_model_without_layers_says_why() -> None:
    class NoLayers:
        name = "gpt"

        def layers(self) -> list[object]:
            raise ValueError("model 'gpt' does not expose its layers (a BERT-family encoder does)")

    with pytest.raises(ValueError, match="does not expose its layers"):
        cross_attention(NoLayers(), X, Y)  # type: ignore[arg-type]


def test_the_lab_is_reachable_from_import_attnviz() -> None:
    assert attnviz.lab.cross_attention is cross_attention
