"""Which tokens to look at first: finding a word among the tokens, the default query and key of
a sentence, and the word lists a visitor types. Pure functions on token lists."""

from __future__ import annotations

from collections.abc import Mapping

from .result import Attention

__all__ = ["default_focus", "find_token", "parse_words"]


def find_token(tokens: list[str], word: str, start: int = 0) -> int | None:
    """Index of the first token that is `word` (case-insensitive), or shows it as unknown
    ("[UNK]:它"), at or after `start`; else the first of a run of tokens that spell it (a model
    that reads 动物 as 动 物 or [UNK]:动 [UNK]:物); None when there is none."""
    w = word.strip().lower()
    if not w:
        return None
    for i in range(max(start, 0), len(tokens)):
        tok = tokens[i].lower()
        if tok == w or tok.endswith(":" + w):
            return i
    compact = "".join(w.split())
    for i in range(max(start, 0), len(tokens)):
        spelled = ""
        for tok in tokens[i:]:
            spelled += tok.lower().rsplit("]:", 1)[-1].removeprefix("##")  # "[UNK]:动" -> "动", "##ing" -> "ing"
            if spelled == compact:
                return i
            if not spelled or not compact.startswith(spelled):
                break
    return None


def default_focus(att: Attention, example: Mapping[str, str] | None = None) -> tuple[int, int]:
    """(query, key) to show first: the example's query and key words when the sentence is an
    example and both are found; otherwise the last and the first ordinary (non-special) token."""
    ordinary = [i for i in range(att.n) if not att.special[i]] or list(range(att.n))
    q = find_token(att.tokens, example["query"]) if example else None
    k = find_token(att.tokens, example["key"]) if example else None
    return (ordinary[-1] if q is None else q), (ordinary[0] if k is None else k)


def parse_words(raw: str, limit: int = 20) -> list[str]:
    """Words separated by commas (ASCII or full-width "，"), stripped, empty ones dropped, at
    most `limit`."""
    return [w.strip() for w in raw.replace("，", ",").split(",") if w.strip()][:limit]
