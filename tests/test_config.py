"""Deployment settings, the text guard, and the byte-bounded result cache."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from attnviz import Attention, i18n
from attnviz.cache import ResultCache, nbytes
from attnviz.config import DEFAULT_MAX_CHARS, check_text, settings_from_env
from attnviz.models.tokens import TextRefused, checked_text


def test_local_settings_allow_any_model() -> None:
    s = settings_from_env({})
    assert not s.demo and s.free_model_ids and s.max_chars == DEFAULT_MAX_CHARS
    assert s.check_model(" bert-base-uncased ") == "bert-base-uncased"


def test_demo_mode_restricts_models_before_loading() -> None:
    s = settings_from_env({"ATTNVIZ_DEMO": "1"})
    assert s.demo and not s.free_model_ids and s.allowed_models == ("minilm", "e5-small", "scratch", "smollm2")
    assert s.check_model("minilm") == "minilm"
    with pytest.raises(ValueError, match="not available here"):
        s.check_model("bert-base-uncased")
    custom = settings_from_env({"ATTNVIZ_DEMO": "true", "ATTNVIZ_ALLOWED_MODELS": "minilm, bert-base-uncased"})
    assert custom.allowed_models == ("minilm", "bert-base-uncased")


def test_model_choices_list_builtins_extras_and_the_allow_list() -> None:
    assert settings_from_env({}).model_choices == ("minilm", "e5-small", "scratch", "smollm2")
    baked = settings_from_env({"ATTNVIZ_EXTRA_MODELS": "bert-base-uncased distilbert-base-uncased"})
    assert baked.model_choices == (
        "minilm",
        "e5-small",
        "scratch",
        "smollm2",
        "bert-base-uncased",
        "distilbert-base-uncased",
    )
    demo = settings_from_env({"ATTNVIZ_ALLOWED_MODELS": "minilm,gpt2", "ATTNVIZ_EXTRA_MODELS": "bert-base-uncased"})
    assert demo.model_choices == ("minilm", "gpt2")


def test_bad_numbers_in_the_environment_fall_back_to_defaults() -> None:
    s = settings_from_env({"ATTNVIZ_MAX_CHARS": "lots", "ATTNVIZ_MAX_TOKENS": "-5", "ATTNVIZ_CACHE_MB": "64"})
    assert s.max_chars == DEFAULT_MAX_CHARS and s.max_tokens == 2 and s.cache_mb == 64


@pytest.mark.parametrize("bad", ["", "  \n", None, 42])
def test_check_text_refuses_empty_and_non_text(bad: object) -> None:
    with pytest.raises(ValueError):
        check_text(bad)


def test_check_text_names_the_limit() -> None:
    with pytest.raises(ValueError, match="1,000") as err:
        check_text("x" * 1001, max_chars=1000)
    assert "1,001" in str(err.value)
    assert check_text("word " * 3000, DEFAULT_MAX_CHARS) == "word " * 3000  # 3,000 words pass the default limit


@pytest.mark.parametrize(
    ("bad", "reason", "values"),
    [
        (42, "not_text", {}),
        ("  \n", "empty", {}),
        ("\x00\x07 \x1b", "empty", {}),  # control characters only: nothing left once cleaned
        ("x" * 1001, "too_long", {"n": "1,001", "limit": "1,000"}),
    ],
)
def test_a_refused_text_names_its_reason_and_every_catalogue_says_it(bad: object, reason: str, values: dict) -> None:
    with pytest.raises(TextRefused) as err:
        check_text(bad, max_chars=1000)
    assert (err.value.reason, err.value.values) == (reason, values)
    said = {lang: i18n.t(err.value.key, lang, **err.value.values) for lang in i18n.LANGUAGES}
    assert all(err.value.key in i18n.catalogue(lang) for lang in i18n.LANGUAGES)
    assert str(err.value) == said["en"] and said["zh"] != said["en"]  # the command line prints the English
    assert all(v in said["zh"] for v in values.values())


def test_the_runners_encode_check_is_the_same_check_and_cleans() -> None:
    assert checked_text("a\x00b") == "a b"
    with pytest.raises(TextRefused, match=i18n.t("err.empty", "en")):
        checked_text("\x01\x02")


def _att(n: int) -> Attention:
    w = np.full((1, 1, n, n), 1.0 / n, dtype=np.float32)
    return Attention(tokens=[str(i) for i in range(n)], weights=w, model="m")


def test_nbytes_counts_arrays_inside_dataclasses() -> None:
    assert nbytes(_att(100)) >= 100 * 100 * 4


def test_cache_is_bounded_by_entries_and_bytes() -> None:
    cache = ResultCache(max_entries=3, max_bytes=10**9)
    for i in range(5):
        cache.put(i, _att(4))
    assert len(cache) == 3 and cache.get(0) is None and cache.get(4) is not None
    small = ResultCache(max_entries=100, max_bytes=3 * 400 * 400 * 4)
    for i in range(10):
        small.put(i, _att(400))  # 640 kB each
    assert small.bytes <= small.max_bytes and len(small) == 2
    small.put("huge", _att(2000))  # larger than the whole budget: not kept
    assert small.get("huge") is None and small.bytes <= small.max_bytes


def test_cache_is_lru() -> None:
    cache = ResultCache(max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.get("a")
    cache.put("c", 3)
    assert cache.get("a") == 1 and cache.get("b") is None


def test_concurrent_requests_for_one_key_compute_once() -> None:
    cache = ResultCache()
    calls = []

    def slow() -> str:
        calls.append(1)
        time.sleep(0.2)
        return "value"

    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get_or_compute("k", slow))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["value"] * 6 and len(calls) == 1


def test_failed_computation_is_not_cached() -> None:
    cache = ResultCache()

    def boom() -> str:
        raise ValueError("no")

    with pytest.raises(ValueError):
        cache.get_or_compute("k", boom)
    assert cache.get_or_compute("k", lambda: "ok") == "ok"


def test_the_demo_keeps_the_decoder_to_256_tokens_and_the_encoders_to_512() -> None:
    """A SmolLM2 pass at 512 tokens adds about 430 MB over its weights, past the demo's 1,500 MB
    with three models loaded (docs/RELIABILITY.md); the encoders keep the whole limit."""
    demo = settings_from_env({"ATTNVIZ_DEMO": "1"})
    assert (demo.token_limit("smollm2"), demo.token_limit("minilm"), demo.token_limit("e5-small")) == (256, 512, 512)
    local = settings_from_env({})
    assert local.token_limit("smollm2") == local.token_limit("minilm") == 512
    assert settings_from_env({"ATTNVIZ_DEMO": "1", "ATTNVIZ_DECODER_TOKENS": "512"}).token_limit("smollm2") == 512
    assert settings_from_env({"ATTNVIZ_MAX_TOKENS": "100"}).token_limit("smollm2") == 100  # never above the limit
