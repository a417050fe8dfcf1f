"""Command line: python -m attnviz "TEXT" [options]. See ARCHITECTURE.md for the contract.

Exit status 0 on success, 2 on bad input or a model that cannot be loaded (one line on
stderr, no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import NoReturn

from .config import check_text, settings_from_env
from .pretrained import DEFAULT_MAX_TOKENS, EMBEDDED_MODEL, ModelLoadError, load_model
from .result import Attention


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"attnviz: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m attnviz", description="Attention weights of every layer and head for a text.")
    p.add_argument("text", help="the text to analyse ('-' reads standard input)")
    p.add_argument(
        "--model", default=EMBEDDED_MODEL, help="minilm (embedded, default), scratch, a Hugging Face id or a directory"
    )
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), cpu or cuda")
    p.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS, help="truncate longer input (default 512)")
    p.add_argument("--no-scale", action="store_true", help="scratch: do not divide scores by sqrt(d_k)")
    p.add_argument("--no-positions", action="store_true", help="scratch: switch position embeddings off")
    p.add_argument("--causal", action="store_true", help="scratch: mask the upper triangle")
    p.add_argument("--random-weights", action="store_true", help="scratch: untrained random weights")
    p.add_argument("--seed", type=int, default=0, help="scratch: seed for --random-weights")
    p.add_argument("--json", metavar="OUT", help="write the result as JSON to OUT ('-' for stdout)")
    p.add_argument("--html", metavar="OUT", help="write the all-heads view as a self-contained HTML file")
    return p


def to_json(att: Attention) -> dict[str, object]:
    return {
        "model": att.model,
        "device": att.device,
        "tokens": att.tokens,
        "truncated": att.truncated,
        "weights": att.weights.round(6).tolist(),  # layers x heads x n x n
    }


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        text = sys.stdin.read() if args.text == "-" else args.text
        check_text(text, settings_from_env().max_chars)
        scratch_only = args.no_scale or args.no_positions or args.causal or args.random_weights
        if scratch_only and args.model != "scratch":
            raise ValueError("--no-scale, --no-positions, --causal and --random-weights need --model scratch")
        if args.max_tokens < 2:
            raise ValueError("--max-tokens must be at least 2")
        model = load_model(
            args.model,
            device=args.device,
            scale=not args.no_scale,
            positions=not args.no_positions,
            causal=args.causal,
            weights="random" if args.random_weights else "pretrained",
            seed=args.seed,
            max_tokens=args.max_tokens,
        )
        att = model.attend(text)
        if att.truncated:
            print(f"attnviz: note: input truncated to {att.n} of {att.n_input_tokens} tokens", file=sys.stderr)
        _write_outputs(att, args.json, args.html)
    except (ValueError, ModelLoadError, OSError) as exc:
        print(f"attnviz: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # a CLI user gets one line, never a traceback
        print(f"attnviz: error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return 2
    if not args.json and not args.html:
        _print_summary(att)
    return 0


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _write_outputs(att: Attention, json_out: str | None, html_out: str | None) -> None:
    if json_out:
        payload = json.dumps(to_json(att), ensure_ascii=False)
        if json_out == "-":
            sys.stdout.write(payload + "\n")
        else:
            with open(json_out, "w", encoding="utf-8") as fh:
                fh.write(payload)
    if html_out:
        from .export import figure_html
        from .views import model_view

        settings = {"text": att.text, "model": att.model}
        with open(html_out, "w", encoding="utf-8") as fh:
            fh.write(figure_html(model_view(att), settings))


def _print_summary(att: Attention) -> None:
    print(f"{att.model} on {att.device}: {att.n_layers} layers x {att.n_heads} heads, {att.n} tokens")
    print(" ".join(att.tokens))
    last = att.head(att.n_layers - 1)  # mean of heads, last layer
    for i, tok in enumerate(att.tokens):
        j = int(last[i].argmax())
        print(f"  {tok!s:>14} -> {att.tokens[j]} ({last[i, j]:.2f})")


if __name__ == "__main__":
    sys.exit(main())
