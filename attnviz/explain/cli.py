"""`python -m attnviz evidence`: the faithfulness scoreboard (of the sentence embedding, or of the
token --query names), a whole-layer contribution map, the sink heads of a text, or why a head
scores a key (explain.score_sources, at most 256 tokens; --max-tokens does not apply).
Exit status 0 on success, 2 on bad input or a model that cannot be loaded (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from .. import explain
from .._cli import Parser, guarded, read_text, write_json
from ..focus import find_token
from ..models import EMBEDDED_MODEL, ModelLoadError, Runner, load_model


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        "attnviz evidence",
        "Which explanation tracks the model: the faithfulness scoreboard, contribution maps, sink heads, "
        "and why a head looks where it does.",
    )
    p.add_argument("text", help="the text ('-' reads standard input)")
    p.add_argument("--query", help="token to explain, by position or as a word (default: the sentence embedding)")
    p.add_argument(
        "--methods", default=",".join(explain.SCOREBOARD_METHODS), help="scoreboard methods, comma-separated"
    )
    p.add_argument(
        "--max-tokens", type=int, default=explain.FAITHFULNESS_MAX_TOKENS, help="cut longer input (default 128)"
    )
    p.add_argument(
        "--map", metavar="METHOD", choices=explain.CONTRIBUTION_METHODS, help="print one contribution map instead"
    )
    p.add_argument("--sinks", action="store_true", help="print the sink heads instead (Gu et al. 2024, epsilon 0.3)")
    p.add_argument(
        "--why",
        metavar="LAYER,HEAD,I,J",
        help="why head (LAYER, HEAD) scores key token J from query token I: the parts of the score on each side",
    )
    p.add_argument(
        "--model", default=EMBEDDED_MODEL, help="minilm (default), scratch, a Hugging Face id or a directory"
    )
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--json", metavar="OUT", help="write the result as JSON to OUT ('-' for stdout)")
    return p


def _query(model: Runner, text: str, raw: str | None, max_tokens: int) -> int | None:
    if raw is None:
        return None
    tokens = model.encode(text, max_tokens).tokens
    found = int(raw) if raw.lstrip("-").isdigit() else find_token(tokens, raw)  # find_token's index is in range
    if found is None:
        raise ValueError(f"--query {raw!r} is not among the tokens: {' '.join(tokens)}")
    if not 0 <= found < len(tokens):
        raise ValueError(f"--query {found} is outside 0..{len(tokens) - 1}")
    return found


def _number(v: float) -> float | None:
    return None if math.isnan(v) else round(float(v), 6)


def scoreboard(model: Runner, text: str, query: int | None, methods: list[str], max_tokens: int) -> dict[str, Any]:
    board = explain.faithfulness(model, text, query, methods=methods, max_tokens=max_tokens)
    return {
        "model": board.model,
        "tokens": board.tokens,
        "query": board.query,
        "truncated": board.truncated,
        "notes": list(board.notes),
        "best": board.best,
        "leaders": board.leaders,
        "removed": board.removed.tolist(),
        "loo": [round(float(v), 6) for v in board.loo],
        "rows": [{k: (_number(v) if isinstance(v, float) else v) for k, v in row.items()} for row in board.table()],
        "curves": {r.method: [round(float(v), 6) for v in r.curve] for r in board.rows},
    }


def contribution_map(model: Runner, text: str, method: str, max_tokens: int) -> dict[str, Any]:
    c = explain.contributions(model, text, method, max_tokens=max_tokens)
    return {
        "model": c.model,
        "method": c.method,
        "tokens": c.tokens,
        "truncated": c.truncated,
        "rolled": c.rolled.round(6).tolist(),
        "per_layer": c.per_layer.round(6).tolist(),
    }


def sink_heads(model: Runner, text: str, max_tokens: int) -> dict[str, Any]:
    # Value norms from the attention's own pass where it keeps them (no second model load).
    att, values = explain.attend_keeping_values(model, text, max_tokens)
    try:  # a model whose layers cannot be taken apart has no value norms
        norms = values.norms() if values else explain.norm_weights(model, model.fit(text, max_tokens)).value_norms
    except ValueError:
        norms = None
    s = explain.sink_scores(att, norms=norms if norms is not None and norms.shape == att.weights.shape[:3] else None)
    heads = [  # every (layer, head, token) above epsilon (Gu et al.), strongest first in each head
        {
            "layer": int(layer),
            "head": int(head),
            "token": att.tokens[int(k)],
            "share": round(float(s.received[layer, head, k]), 4),
            "value_norm_ratio": _number(float(s.value_ratio(int(k))[layer, head])),
        }
        for layer, head, k in sorted(
            zip(*s.sinks.nonzero(), strict=True), key=lambda lhk: (lhk[0], lhk[1], -s.received[lhk])
        )
    ]
    return {
        "model": model.name,
        "tokens": att.tokens,
        "threshold": s.threshold,
        "rate": round(s.rate, 4),
        "parked": [att.tokens[k] for k in s.parking()],
        "sunk_on": [
            {"index": int(k), "token": att.tokens[int(k)], "rate": round(s.rate_on(int(k)), 4)} for k in s.columns
        ],
        "heads": heads,
    }


def _why_spec(raw: str) -> tuple[int, int, int, int]:
    cells = [c.strip() for c in raw.split(",")]
    if len(cells) != 4 or not all(c.isdigit() for c in cells):
        raise ValueError(f"--why takes LAYER,HEAD,I,J, four whole numbers from 0 (got {raw!r})")
    layer, head, query, key = map(int, cells)
    return layer, head, query, key


def why(model: Runner, text: str, raw: str, top: int = 5) -> dict[str, Any]:
    s = explain.score_sources(model, text, *_why_spec(raw))

    def rows(side: str) -> list[dict[str, Any]]:
        return [{"part": n, "value": round(v, 6), "share": _number(sh)} for n, v, sh in s.top(side, top)]

    return {
        "model": s.model,
        "tokens": s.tokens,
        "layer": s.layer,
        "head": s.head,
        "kv_head": s.kv_head,
        "query": s.query,
        "key": s.key,
        "score": round(s.score, 6),
        "model_score": round(s.model_score, 6),
        "weight": round(s.weight, 6),
        "query_side": rows("query"),
        "key_side": rows("key"),
        "through_heads": [
            {"part": n, "query": _number(q), "key": _number(k), "either": _number(e)}
            for n, q, k, e in explain.composing_heads(s, top)
        ],
        "query_parts": s.query_parts,
        "key_parts": s.key_parts,
        "matrix": s.matrix.round(6).tolist(),
    }


def _percent(v: float | None) -> str:
    return "—" if v is None else f"{v:.0%}".replace("-0%", "0%")


def _print(result: dict[str, Any], kind: str) -> None:
    print(f"{result['model']}: {' '.join(result['tokens'])}")
    if kind == "why":
        r, words = result, result["tokens"]
        print(
            f"layer {r['layer']}, head {r['head']} (key/value head {r['kv_head']}): "
            f"query {r['query']} {words[r['query']]!r} -> key {r['key']} {words[r['key']]!r}: "
            f"score {r['score']:.4f} (the model's own {r['model_score']:.4f}), weight {r['weight']:.3f}"
        )
        for side in ("query_side", "key_side"):
            print(f"{side.replace('_', ' ')}, the parts that move the score most:")
            for row in r[side]:
                print(f"  {row['part']:<10}{row['value']:>10.4f}{_percent(row['share']):>8}")
        if r["through_heads"]:
            print("through earlier heads' outputs (query side, key side, either):")
            for row in r["through_heads"]:
                print(f"  {row['part']:<10}" + "".join(f"{_percent(row[k]):>8}" for k in ("query", "key", "either")))
    elif kind == "map":
        print(f"{result['method']}, traced to the input (row = output position):")
        for tok, row in zip(result["tokens"], result["rolled"], strict=True):
            top = sorted(range(len(row)), key=lambda j: -row[j])[:3]
            print(f"  {tok!s:>14} <- " + ", ".join(f"{result['tokens'][j]} {row[j]:.2f}" for j in top))
    elif kind == "sinks":
        n_heads = len({(h["layer"], h["head"]) for h in result["heads"]})
        print(
            f"{n_heads} sink heads ({result['rate']:.0%} of all; {len(result['heads'])} (head, token) pairs), "
            f"threshold {result['threshold']}; attention parked on: {', '.join(result['parked']) or 'nothing'}"
        )
        for h in result["heads"]:
            r = h["value_norm_ratio"]
            ratio = "" if r is None else f", value length {r:.2f} x the head's mean"
            print(f"  layer {h['layer']}, head {h['head']}: {h['share']:.0%} to {h['token']}{ratio}")
    else:
        target = "sentence embedding" if result["query"] is None else f"token {result['tokens'][result['query']]}"
        print(f"scoreboard for the {target} (best by AOPC: {', '.join(result['leaders'])}):")
        print(f"  {'method':<16}{'spearman':>10}{'kendall':>10}{'aopc':>9}{'-random':>9}")
        widths = {"spearman": 10, "kendall": 10, "aopc": 9, "aopc_over_random": 9}
        for r in result["rows"]:
            cells = "".join(f"{'—' if r[k] is None else f'{r[k]:.3f}':>{w}}" for k, w in widths.items())
            print(f"  {r['method']:<16}{cells}")
    for note in result.get("notes", []):
        print(f"note: {note}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def body() -> int:
        text = read_text(args.text)
        if args.max_tokens < 2:
            raise ValueError("--max-tokens must be at least 2")
        if sum(bool(x) for x in (args.map, args.sinks, args.why)) > 1:
            raise ValueError("choose one of --map, --sinks and --why")
        if args.why:
            _why_spec(args.why)  # a malformed spec is refused before the model loads
        model = load_model(args.model, device=args.device)
        if args.why:
            kind, result = "why", why(model, text, args.why)
        elif args.map:
            kind, result = "map", contribution_map(model, text, args.map, args.max_tokens)
        elif args.sinks:
            kind, result = "sinks", sink_heads(model, text, args.max_tokens)
        else:
            methods = [m.strip() for m in args.methods.split(",") if m.strip()]
            query = _query(model, text, args.query, args.max_tokens)
            kind, result = "scoreboard", scoreboard(model, text, query, methods, args.max_tokens)
        if args.json:  # --json says what it read
            write_json(
                args.json, json.dumps({**result, "text": text}, ensure_ascii=False).encode("utf-8", "backslashreplace")
            )
        else:
            _print(result, kind)
        return 0

    return guarded("attnviz evidence", body, (ValueError, IndexError, ModelLoadError, OSError))


if __name__ == "__main__":
    sys.exit(main())
