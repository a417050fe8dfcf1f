"""What the Write panel shows of a generation (attnviz/views/generation.py), against references
that do not go through it: on SmolLM2 writing Chinese (byte pieces) and English, the text shown
through each step is the bytes written so far decoded with an unfinished last character left
out, and a subsequence of the whole text's characters; a chosen byte piece is named by the
character the sequence's own spans give it; the bars and the heatmap hold the step's own rows;
an axis labels at most `MAX_X_LABELS` tokens, the newest always; the first-token share is
column 0 of the rows."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from attnviz.app.sections.write import Written, _spans
from attnviz.i18n import t
from attnviz.nextword import piece_bytes
from attnviz.views import generation as gv

from .smollm2_model import smollm2

TEXTS = ("我爱北京。", "The capital of France is")


@pytest.fixture(scope="module", params=TEXTS)
def written(request: pytest.FixtureRequest) -> Written:
    model = smollm2()
    return _spans(model, attnviz.generate(model, request.param, 10))


def _bytes(token: str) -> bytes:
    own = piece_bytes(token)
    return token.encode("utf-8") if own is None else own


def test_the_text_through_a_step_is_its_bytes_in_whole_characters(written: Written) -> None:
    gen = written.gen
    data = gen.prompt.encode("utf-8")
    for k, step in enumerate(gen.steps):
        data += _bytes(step.token)
        shown = written.until(k)
        assert shown == data.decode("utf-8", "ignore")  # an unfinished last character is left out
        assert gen.text.startswith(shown) and "\ufffd" not in shown
    assert written.until(len(gen.steps) - 1) == gen.text  # both texts end on a whole character


def test_a_chosen_byte_piece_is_named_by_the_character_its_span_gives(written: Written) -> None:
    gen = written.gen
    pieces = 0
    for k, step in enumerate(gen.steps):
        label = gv.step_label(gen, k, lang="en")
        (chosen,) = [c for c in gv.choices(gen, k, lang="en") if c.chosen] or [None]
        if chosen is not None:
            assert chosen.label == label and chosen.token_id == step.token_id
        own = piece_bytes(step.token)
        if own is None:
            continue
        pieces += 1
        a, b = written.spans[step.position]
        char = gen.text[a:b]
        full = len(char.encode("utf-8"))
        assert label == t("dec.piece_of", "en", text=char, own=len(own), total=full), (label, char)
    assert pieces > 0 or gen.prompt.isascii()  # the Chinese text writes byte pieces


def test_the_figures_hold_the_steps_own_rows(written: Written) -> None:
    gen = written.gen
    k, layer = len(gen.steps) - 1, 3
    rows = gen.steps[k].rows
    bars = gv.row_figure(gen, k, layer, 2).data[0]
    np.testing.assert_array_equal(np.asarray(bars.y), rows[layer, 2])
    mean = gv.row_figure(gen, k, layer, None).data[0]
    np.testing.assert_allclose(np.asarray(mean.y), rows[layer].mean(axis=0), rtol=1e-6)
    grid = gv.layer_figure(gen, k, layer).data[0]
    np.testing.assert_array_equal(np.asarray(grid.z), rows[layer])
    assert len(grid.y) == rows.shape[1] and "kv 2" in grid.y[-1]  # SmolLM2: 9 query heads, 3 key/value heads
    assert gv.sink_share(rows[layer], 2) == pytest.approx(float(rows[layer, 2, 0]))
    assert gv.sink_share(rows[layer]) == pytest.approx(float(rows[layer, :, 0].mean()))


def test_an_axis_labels_at_most_its_bound_and_always_the_newest_token() -> None:
    for n in (5, 24, 25, 60):
        tokens = [f"t{i}" for i in range(n)]
        keys, axis = gv._x_axis(tokens)
        assert len(keys) == n and len(axis["tickvals"]) <= gv.MAX_X_LABELS
        assert axis["tickvals"][-1] == keys[-1] and axis["ticktext"][-1] == f"t{n - 1}"
        if n <= gv.MAX_X_LABELS:
            assert axis["tickvals"] == keys


def test_parting_and_sizes() -> None:
    assert gv.parting([1, 2, 3, 4], [1, 2, 5, 4]) == 2 and gv.parting([1, 2], [1, 2, 3]) == 2
    assert gv.size_text(2**20 - 1) == "1,024.0 KB" and gv.size_text(3 * 2**20 // 2) == "1.50 MB"
