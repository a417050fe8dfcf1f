"""The model runners: embedded MiniLM, tiny local architectures, the scratch encoder, errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import attnviz
from attnviz import ModelLoadError
from attnviz.models import embedded_model_dir, resolve_device

from .conftest import SENTENCES
from .tiny_models import build

ROOT = Path(__file__).resolve().parents[1]


def test_embedded_model_is_a_6x12_bert_found_through_its_package(tired: attnviz.Attention) -> None:
    assert (embedded_model_dir() / "model.safetensors").is_file()
    assert tired.weights.shape == (6, 12, tired.n, tired.n)
    assert tired.weights.dtype == np.float32
    assert tired.model == "minilm" and tired.device == "cpu" and not tired.truncated


def test_tokens_are_readable_with_specials_kept(minilm: attnviz.PretrainedModel) -> None:
    att = minilm.attend("Unbelievably tokenization works")
    assert att.tokens[0] == "[CLS]" and att.tokens[-1] == "[SEP]"
    assert att.special.tolist() == [True] + [False] * (att.n - 2) + [True]
    assert not any(t.startswith("##") for t in att.tokens)
    # pieces of one word share a word id; merging them gives whole words back
    assert att.merge_words().tokens == ["[CLS]", "unbelievably", "tokenization", "works", "[SEP]"]


def test_unknown_characters_show_what_was_unknown(minilm: attnviz.PretrainedModel) -> None:
    att = minilm.attend("robot 🤖")
    assert att.tokens[2] == "[UNK]:🤖"


@pytest.mark.parametrize("text", SENTENCES)
def test_rows_sum_to_one(minilm: attnviz.PretrainedModel, text: str) -> None:
    att = minilm.attend(text)
    np.testing.assert_allclose(att.weights.sum(-1), 1.0, atol=1e-5)
    assert (att.weights >= 0).all()


@pytest.mark.parametrize("text", SENTENCES)
def test_scratch_encoder_equals_pretrained_runner(
    minilm: attnviz.PretrainedModel, scratch: attnviz.ScratchModel, text: str
) -> None:
    a, b = minilm.attend(text), scratch.attend(text)
    assert a.tokens == b.tokens
    np.testing.assert_allclose(b.weights, a.weights, atol=1e-4, rtol=0)


def test_scratch_final_hidden_state_equals_bert(minilm: attnviz.PretrainedModel, scratch: attnviz.ScratchModel) -> None:
    enc = minilm.encode(SENTENCES[2])
    with torch.inference_mode():
        torch.testing.assert_close(
            scratch.last_hidden(enc.inputs), minilm.last_hidden(enc.inputs), atol=1e-4, rtol=1e-4
        )


def test_lab_steps_reproduce_the_heads_weights(scratch: attnviz.ScratchModel) -> None:
    steps = scratch.steps(SENTENCES[0], layer=2, head=5)
    att = scratch.attend(SENTENCES[0])
    np.testing.assert_allclose(steps["weights"], att.weights[2, 5], atol=1e-6)
    np.testing.assert_allclose(steps["scaled"], steps["scores"] / np.sqrt(steps["q"].shape[1]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(steps["output"], steps["weights"] @ steps["v"], atol=1e-5)


def test_scratch_switches(minilm: attnviz.PretrainedModel) -> None:
    text = SENTENCES[0]
    base = minilm.attend(text).weights
    causal = attnviz.load_model("scratch", causal=True).attend(text)
    assert causal.causal
    assert np.all(np.triu(causal.weights, 1) == 0)
    unscaled = attnviz.load_model("scratch", scale=False).attend(text).weights
    assert np.abs(unscaled - base).max() > 0.1
    r0 = attnviz.load_model("scratch", weights="random", seed=0).attend(text).weights
    r0b = attnviz.load_model("scratch", weights="random", seed=0).attend(text).weights
    r1 = attnviz.load_model("scratch", weights="random", seed=1).attend(text).weights
    np.testing.assert_array_equal(r0, r0b)  # a seed reproduces the untrained model
    assert np.abs(r0 - r1).max() > 1e-3 and np.abs(r0 - base).max() > 0.1


def test_positions_off_permuting_the_input_permutes_the_maps() -> None:
    model = attnviz.load_model("scratch", positions=False)
    enc = model.encode("dog bites man")
    ids = enc.inputs["input_ids"]
    perm = torch.tensor([0, 3, 2, 1, 4])  # [CLS] man bites dog [SEP]
    with torch.inference_mode():
        maps = model.attention_maps({"input_ids": ids})
        maps_p = model.attention_maps({"input_ids": ids[:, perm]})
    for a, ap in zip(maps, maps_p, strict=True):
        torch.testing.assert_close(ap, a[:, :, perm][:, :, :, perm], atol=1e-5, rtol=1e-4)
    # and through the public API, text in, maps out
    a, b = model.attend("dog bites man"), model.attend("man bites dog")
    p = perm.numpy()
    np.testing.assert_allclose(b.weights, a.weights[:, :, p][:, :, :, p], atol=1e-5)


def test_long_input_is_truncated_and_flagged(minilm: attnviz.PretrainedModel) -> None:
    att = minilm.attend("word " * 3000)
    assert att.truncated and att.n == 512 and att.n_input_tokens == 3002
    assert att.tokens[-1] == "[SEP]"
    short = minilm.attend("word " * 100, max_tokens=32)
    assert short.n == 32 and short.truncated


@pytest.mark.parametrize("text", ["", "   \n\t ", "\x00\x01"])
def test_empty_text_is_a_clear_value_error(minilm: attnviz.PretrainedModel, text: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        minilm.attend(text)


@pytest.mark.parametrize("arch", ["bert", "distilbert", "roberta", "gpt2"])
def test_loader_handles_tiny_local_architectures(tmp_path: Path, arch: str) -> None:
    folder = build(arch, tmp_path / arch)
    model = attnviz.load_model(str(folder), device="cpu")
    att = model.attend(SENTENCES[0])
    assert att.weights.shape == (2, 4, att.n, att.n) and att.n > 5
    assert np.isfinite(att.weights).all() and att.weights.sum() > 0, "attentions must never be empty"
    np.testing.assert_allclose(att.weights.sum(-1), 1.0, atol=1e-5)
    assert not any(t.startswith(("Ġ", "##")) for t in att.tokens)
    assert "animal" in att.tokens
    if arch == "gpt2":
        assert model.causal and np.all(np.triu(att.weights, 1) == 0), "causal models give lower-triangular maps"
    else:
        assert not model.causal and np.triu(att.weights, 1).sum() > 0
    long = model.attend("word " * 500)
    assert long.truncated and long.n <= 64


def test_loader_reports_missing_directory_and_unknown_id(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="does not exist"):
        attnviz.load_model(str(tmp_path / "nope"))
    with pytest.raises(ModelLoadError, match="neither"):
        attnviz.load_model("not a model id")


@pytest.mark.parametrize("name", ["x" * 201, "a/b" * 100, "<script>", "m\x00odel", "a'b", 'a"b', "a\nb", "a;b"])
def test_model_names_are_capped_in_length_and_characters_before_any_loading(name: str) -> None:
    """A visitor's model id lands in tables, logs and messages: a 2 MB id or markup is refused
    unread (issue: failed model names piled up in memory)."""
    with pytest.raises(ValueError, match=r"characters|may hold"):
        attnviz.load_model(name)


def test_directory_without_weights_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((embedded_model_dir() / "config.json").read_text())
    with pytest.raises(ModelLoadError, match="directory"):
        attnviz.load_model(str(tmp_path))


def test_unreachable_hub_names_the_model_and_suggests_the_embedded_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError) as err:
        attnviz.load_model("some-org/no-such-model-xyz")
    assert "some-org/no-such-model-xyz" in str(err.value) and "minilm" in str(err.value)


def test_devices() -> None:
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type in ("cpu", "cuda", "mps")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA"):
            attnviz.load_model("minilm", device="cuda")
    with pytest.raises(ValueError, match="unknown device"):
        resolve_device("tpu")


def test_embedded_model_loads_with_the_hub_offline() -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": "/nonexistent-hf-home"}
    code = "import attnviz; a = attnviz.load_model('minilm').attend('hello world'); print(a.tokens)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "['[CLS]', 'hello', 'world', '[SEP]']" in out.stdout


def test_remote_code_is_never_trusted(tmp_path: Path) -> None:
    """A config that asks for remote code must be refused, not executed."""
    import json

    cfg = json.loads((embedded_model_dir() / "config.json").read_text())
    cfg["auto_map"] = {"AutoModel": "evil.EvilModel", "AutoConfig": "evil.EvilConfig"}
    cfg["model_type"] = "evil-model"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    marker = tmp_path / "ran"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    with pytest.raises(ModelLoadError):
        attnviz.load_model(str(tmp_path))
    assert not marker.exists()


@pytest.mark.parametrize("arch", ["minilm", "roberta"])
def test_in_place_attention_equals_transformers_eager(tmp_path: Path, arch: str) -> None:
    """`attend` writes BERT-family weights straight into its result; they must equal what
    transformers' own eager attention returns with output_attentions=True."""
    from transformers import AutoModel

    source = str(embedded_model_dir()) if arch == "minilm" else str(build(arch, tmp_path / arch))
    model = attnviz.load_model("minilm" if arch == "minilm" else source, device="cpu")
    assert model.writes_in_place
    reference = AutoModel.from_pretrained(source, attn_implementation="eager").eval()
    for text in SENTENCES[:3]:
        att = model.attend(text)
        with torch.inference_mode():
            maps = reference(**model.encode(text).inputs, output_attentions=True).attentions
        np.testing.assert_allclose(att.weights, torch.stack([m[0] for m in maps]).numpy(), atol=1e-5, rtol=0)


def test_accelerator_out_of_memory_falls_back_to_the_cpu_with_a_notice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulated: the runner claims an accelerator (the meta device, so nothing really runs)
    whose forward raises OutOfMemoryError; the answer comes from a CPU copy, with a note."""
    model = attnviz.load_model("minilm", device="cpu")
    monkeypatch.setattr(model, "device", torch.device("meta"))
    reloads = []

    def reload() -> attnviz.PretrainedModel:
        reloads.append(1)
        return attnviz.load_model("minilm", device="cpu")

    def oom(inputs: object) -> np.ndarray:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 75.00 MiB")

    model._reload = reload
    monkeypatch.setattr(model, "attention_array", oom)
    att = model.attend(SENTENCES[0])
    again = model.attend(SENTENCES[1])
    assert att.device == "cpu" and "ran out of memory" in att.notes[0] and again.notes
    assert len(reloads) == 1, "the CPU copy is loaded once"
    expected = attnviz.load_model("minilm", device="cpu").attend(SENTENCES[0]).weights
    np.testing.assert_allclose(att.weights, expected, atol=1e-6)


@pytest.mark.parametrize("in_place", [True, False])
def test_model_without_attention_outputs_is_a_clear_error(tmp_path: Path, in_place: bool) -> None:
    """SDPA (transformers 5's default) computes attention without ever forming the weights:
    a model running it must be reported, not shown as an empty picture."""
    model = attnviz.load_model(str(build("bert", tmp_path / "bert")), device="cpu")
    model.hf_model.set_attn_implementation("sdpa")
    model.writes_in_place = in_place
    with pytest.raises(ModelLoadError, match="no attention weights"):
        model.attend(SENTENCES[0])


@pytest.mark.parametrize("name", ["minilm", "scratch"])
def test_a_padded_batch_gives_each_text_its_own_attention(name: str) -> None:
    """attend_batch pads to the longest text and masks the padding: every result equals
    attend() of that text alone (the corpus engine relies on it)."""
    model = attnviz.load_model(name, device="cpu")
    texts = [SENTENCES[4], SENTENCES[0], "A much longer sentence, with commas, pieces and more words than the others."]
    for one, batched in zip([model.attend(t) for t in texts], model.attend_batch(texts), strict=True):
        assert batched.tokens == one.tokens and batched.weights.shape == one.weights.shape
        np.testing.assert_allclose(batched.weights, one.weights, atol=1e-5)
    assert model.attend_batch([]) == []


def test_a_padded_batch_of_a_decoder_keeps_its_mask(tmp_path: Path) -> None:
    model = attnviz.load_model(str(build("gpt2", tmp_path / "gpt2")), device="cpu")
    texts = ["dog bites man", SENTENCES[0]]
    for one, batched in zip([model.attend(t) for t in texts], model.attend_batch(texts), strict=True):
        np.testing.assert_allclose(batched.weights, one.weights, atol=1e-5)
