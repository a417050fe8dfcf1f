"""SmolLM2 loaded once for the whole test run (a module-level cache shared by every decoder
test file): the first load of a machine converts the GGUF file into the model cache."""

from __future__ import annotations

from functools import cache

import attnviz


@cache
def smollm2() -> attnviz.PretrainedModel:
    model = attnviz.load_model("smollm2", device="cpu")
    assert isinstance(model, attnviz.PretrainedModel)
    return model
