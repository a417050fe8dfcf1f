"""Tokenizers shared by threads: a count of the whole text and an encode cut to the model's limit,
at once, each get their own answer (a fast tokenizer's truncation is state on its Rust backend,
which each transformers call sets); and the one-pass encode (`encode_counted`) gives what
transformers' own call gives, for every kind of tokenizer the runners load."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import attnviz
from attnviz.models.tokens import count_tokens, encode_counted, model_inputs, tokenize

ROOT = Path(__file__).resolve().parents[1]
WORDS = (ROOT / "README.md").read_text(encoding="utf-8").split()
SHORT = [
    "The animal didn't cross the street because it was tired.",
    "dog bites man",
    "小明把书放在桌子上，因为它太重了。",
]


def words(n: int, start: int) -> str:
    return " ".join(WORDS[(i * 7 + start) % len(WORDS)] for i in range(n))


def in_threads(jobs: list[Callable[[], None]]) -> list[BaseException]:
    """Run every job in its own thread, started together; the exceptions they raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(jobs))

    def run(job: Callable[[], None]) -> None:
        start.wait()
        try:
            job()
        except BaseException as e:  # reported by the test
            errors.append(e)

    pool = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return errors


@pytest.fixture(scope="module")
def minilm_hf() -> attnviz.PretrainedModel:
    """MiniLM with transformers' tokenizer (its own, not the session's quick one): a server's
    MiniLM after anything loaded the full model."""
    model = attnviz.load_model("minilm", device="cpu")
    loaded = getattr(model, "loaded", None)
    if loaded is not None:
        loaded()
    assert type(model.tokenizer).__module__.startswith("transformers")
    return model


def test_counting_beside_attends_cuts_every_input_to_the_limit_and_counts_the_whole_text(
    minilm_hf: attnviz.PretrainedModel,
) -> None:
    model, tok = minilm_hf, minilm_hf.tokenizer
    long = [words(3000, k) for k in range(4)]
    texts = long + SHORT
    counts = {t: count_tokens(tok, t) for t in texts}  # one thread: the reference
    alone = {t: model.attend(t).tokens for t in (long[0], SHORT[0])}
    assert all(counts[t] > 512 for t in long)
    attenders = 6
    finished = threading.Semaphore(0)
    counted: list[tuple[str, int]] = []
    cut: list[tuple[str, int]] = []
    results: list[tuple[str, list[str], int]] = []

    def counter(k: int) -> Callable[[], None]:
        def job() -> None:  # until every attender is done
            i = k
            while not finished.acquire(blocking=False):
                text = texts[i % len(texts)]
                counted.append((text, count_tokens(tok, text)))
                cut.append((text, len(tokenize(tok, text, 512)["input_ids"])))
                i += 1
            finished.release()  # for the other counter

        return job

    def attender(k: int) -> Callable[[], None]:
        def job() -> None:
            try:
                for text in (long[k % 4], SHORT[k % 3], long[(k + 1) % 4]):
                    att = model.attend(text)
                    results.append((text, att.tokens, att.weights.shape[-1]))
            finally:
                done.append(k)
                if len(done) == attenders:
                    finished.release()

        return job

    done: list[int] = []
    errors = in_threads([counter(0), counter(3), *(attender(k) for k in range(attenders))])
    assert not errors, [repr(e)[:200] for e in errors]
    assert len(results) == 3 * attenders
    assert all(n == len(tokens) <= 512 for _, tokens, n in results)
    for text, tokens, _ in results:
        if text in alone:
            assert tokens == alone[text]
    assert counted and cut
    assert all(n == counts[text] for text, n in counted)
    assert all(n == min(counts[text], 512) for text, n in cut)


def test_encodes_cut_to_different_limits_at_once_keep_their_own_limit(minilm_hf: attnviz.PretrainedModel) -> None:
    tok = minilm_hf.tokenizer
    text = words(3000, 5)
    limits = [2, 17, 128, 512]
    reference = {limit: tokenize(tok, text, limit)["input_ids"] for limit in limits}
    whole = count_tokens(tok, text)
    got: list[tuple[int, list[int]]] = []
    counted: list[int] = []

    def job(limit: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(8):
                got.append((limit, list(tokenize(tok, text, limit)["input_ids"])))
                counted.append(count_tokens(tok, text))

        return run

    assert not in_threads([job(limit) for limit in limits])
    assert all(ids == reference[limit] for limit, ids in got)
    assert counted == [whole] * len(counted)


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The tokenizers the runners load: MiniLM's (transformers'), e5-small's, SmolLM2's, and a
    byte-level BPE as RoBERTa and GPT-2 build theirs."""
    from transformers import AutoTokenizer, GPT2TokenizerFast, RobertaTokenizerFast

    from attnviz.models.e5 import e5_tokenizer
    from attnviz.models.loading import _hf_tokenizer
    from attnviz.models.smollm2 import ensure_cache

    from .tiny_models import _byte_bpe

    tmp_path = tmp_path_factory.mktemp("bpe")
    return {
        "minilm": _hf_tokenizer(),
        "e5-small": e5_tokenizer(),
        "smollm2": AutoTokenizer.from_pretrained(str(ensure_cache())),
        "roberta": _byte_bpe(
            tmp_path / "roberta",
            RobertaTokenizerFast,
            bos_token="<s>",
            eos_token="</s>",
            unk_token="<unk>",
            pad_token="<pad>",
            mask_token="<mask>",
        ),
        "gpt2": _byte_bpe(
            tmp_path / "gpt2",
            GPT2TokenizerFast,
            bos_token="<|endoftext|>",
            eos_token="<|endoftext|>",
            unk_token="<|endoftext|>",
        ),
    }


@pytest.mark.parametrize("name", ["e5-small", "smollm2"])
def test_the_other_embedded_tokenizers_count_and_cut_from_many_threads_as_from_one(
    tokenizers: dict[str, Any], name: str
) -> None:
    tok = tokenizers[name]
    texts = [words(3000, 1), "小明把书放在桌子上，因为它太重了。" * 150, *SHORT]
    limits = [128, 512]
    counts = {t: count_tokens(tok, t) for t in texts}
    cuts = {(t, limit): tokenize(tok, t, limit)["input_ids"] for t in texts for limit in limits}
    assert all(counts[t] > 512 for t in texts[:2])
    counted: list[tuple[str, int]] = []
    got: list[tuple[str, int, list[int]]] = []

    def counter() -> None:
        for _ in range(4):
            counted.extend((t, count_tokens(tok, t)) for t in texts)

    def cutter(limit: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(4):
                got.extend((t, limit, tokenize(tok, t, limit)["input_ids"]) for t in texts)

        return run

    assert not in_threads([counter, counter, *(cutter(limit) for limit in limits)])
    assert all(n == counts[t] for t, n in counted)
    assert all(ids == cuts[t, limit] for t, limit, ids in got)


def test_one_pass_encoding_equals_transformers_own_call_for_every_kind_of_tokenizer(
    tokenizers: dict[str, Any],
) -> None:
    texts = [*SHORT, words(700, 3), "  spaced   out \n line\tand [SEP] in the text 🙂 灯灯灯 ", "x"]
    for name, tok in tokenizers.items():
        for text in texts:
            whole = len(tok(text, truncation=False, verbose=False)["input_ids"])
            for limit in (3, 5, 64, 512, None):
                want = tok(
                    text,
                    truncation=limit is not None,
                    max_length=limit,
                    return_special_tokens_mask=True,
                    return_offsets_mapping=True,
                    verbose=False,
                )
                enc, n = encode_counted(tok, text, limit)
                where = (name, text[:20], limit)
                assert n == whole, where
                assert model_inputs(tok, enc) == {k: want[k] for k in tok.model_input_names if k in want}, where
                assert list(enc.special_tokens_mask) == want["special_tokens_mask"], where
                assert [tuple(o) for o in enc.offsets] == [tuple(o) for o in want["offset_mapping"]], where
                assert list(enc.word_ids) == want.word_ids(0), where


@pytest.mark.slow
def test_the_race_benchmark_prints_every_way_for_each_length() -> None:
    from .benchrun import run_bench

    table = run_bench(
        "bench_tokenizer_race.py", "--threads", "2", "--calls", "2", "--repeats", "1", "--words", "12", "60"
    )
    rows = [line for line in table.splitlines() if line.startswith(("| 12 |", "| 60 |"))]
    assert len(rows) == 2
    assert all(all(float(cell) > 0 for cell in row.strip("| ").split(" | ")[1:]) for row in rows)
    assert len(rows[0].strip("| ").split(" | ")) == 5  # the words, then four ways
