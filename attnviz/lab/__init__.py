"""`attnviz.lab`: the seed concepts tried by hand (experiments, cross-attention, FlashAttention's
tiles, sparse masks). Names load on first use, so the sparse kinds are read without torch."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .cross import cross_attention, cross_steps
    from .experiments import (
        SWEEP_SIZES,
        CostRow,
        OrderResult,
        cost_sweep,
        max_abs_diff,
        order_demo,
        permutation,
        row_entropy,
        scaling_entropies,
    )
    from .flash import flash_attention
    from .sparse import sparse_count, sparse_mask

_MODULES = {  # module: the names it gives
    "cross": "cross_attention cross_steps",
    "experiments": "SWEEP_SIZES CostRow OrderResult cost_sweep max_abs_diff order_demo permutation row_entropy "
    "scaling_entropies",
    "flash": "flash_attention",
    "sparse": "sparse_count sparse_mask",
}
_LAZY = {name: module for module, names in _MODULES.items() for name in names.split()}
__all__ = [
    "SWEEP_SIZES",
    "CostRow",
    "OrderResult",
    "cost_sweep",
    "cross_attention",
    "cross_steps",
    "flash_attention",
    "max_abs_diff",
    "order_demo",
    "permutation",
    "row_entropy",
    "scaling_entropies",
    "sparse_count",
    "sparse_mask",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
