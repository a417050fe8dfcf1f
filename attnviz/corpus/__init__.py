"""Corpus analysis: per-head attention statistics over many texts, on the local or a Ray engine.

import attnviz.corpus
result = attnviz.corpus.run("sentences.txt", "out/", model="minilm", engine="local")
result.grid("prev")                       # (layers, heads) mean share on the previous token
result.grid("prev", "std")                # its spread over the corpus
result.typical("prev", 0, 3)              # sentences where head 0-3 is most / least typical
result = attnviz.corpus.load("out/")      # a finished run read back
attnviz.corpus.atlas(model, texts, layer=2, head=5)   # the query-key atlas of one head
"""

from __future__ import annotations

from .atlas import DEFAULT_MAX_POINTS, Atlas, align, atlas, methods, project, query_key_vectors
from .batch import STATS, Analysis, analyse
from .engine import DEFAULT_BATCH_SIZE, DEFAULT_CORPUS_TOKENS, DEFAULT_SHARD_SIZE, RunProgress, run
from .output import CorpusResult, load
from .readers import DEFAULT_MAX_CHARS, FORMATS, SKIP_REASONS, Record, open_source
from .shards import SettingsMismatch

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_CORPUS_TOKENS",
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_POINTS",
    "DEFAULT_SHARD_SIZE",
    "FORMATS",
    "SKIP_REASONS",
    "STATS",
    "Analysis",
    "Atlas",
    "CorpusResult",
    "Record",
    "RunProgress",
    "SettingsMismatch",
    "align",
    "analyse",
    "atlas",
    "load",
    "methods",
    "open_source",
    "project",
    "query_key_vectors",
    "run",
]
