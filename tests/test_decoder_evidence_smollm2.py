"""The decoder evidence on SmolLM2 itself (issue 19.4), kept to two tests: the first token is
the sink Gu et al. count (most heads of the later layers), the contributions keep their
invariants on a real model, and the scoreboard scores the continuation " Paris"."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from attnviz import explain

from .smollm2_model import smollm2

pytestmark = pytest.mark.slow  # SmolLM2's 30 layers: about a minute on 2 shared cores

TEXT = "The capital of France is"
LONG = "The animal didn't cross the street because it was too tired, so it stayed on the pavement all afternoon."


@pytest.fixture(scope="module")
def model() -> attnviz.PretrainedModel:
    return smollm2()


def test_first_token_sink_and_contributions(model: attnviz.PretrainedModel) -> None:
    att = model.attend(LONG)
    s = explain.sink_scores(att)  # causal means: column k over the n - k queries that see it
    assert s.rate_on(0) > 0.5, s.rate_on(0)  # Gu et al.'s Sink_1: most of the 270 heads park on the first token
    later = s.received[3:, :, 0].mean()  # from layer 3 on, as the issue measured (60-90 %)
    assert later > 0.5 and later > s.received[3:, :, 1:].max(-1).mean(), later
    for method, c in explain.contributions_all(model, TEXT, ["attention", "norm", "alti"]).items():
        for maps in (c.per_layer, c.rolled_layers):
            np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5, err_msg=method)
            assert (maps >= 0).all() and not np.triu(maps, 1).any(), method


def test_scoreboard_scores_the_continuation(model: attnviz.PretrainedModel) -> None:
    sb = explain.faithfulness(model, TEXT, continuation=" Paris", methods=["attention", "alti", "gradient"], steps=5)
    assert sb.output == "log-probability drop" and sb.target == " Paris"
    assert sb.loo[sb.tokens.index("France")] > 0.5  # without "France", " Paris" is much less likely
    assert all(np.isfinite(r.aopc) for r in sb.rows)
