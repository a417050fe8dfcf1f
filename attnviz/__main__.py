"""Command line (see ../shared/ARCHITECTURE.md for the contract):

    python -m attnviz "TEXT" [options]          attention of one text (also: attnviz analyse "TEXT")
    python -m attnviz corpus INPUT --out DIR    per-head statistics of a whole corpus
    python -m attnviz train --task induction    train a tiny transformer and watch its heads form
    python -m attnviz long FILE --out DIR       overviews and received weights of a long text, every head
    python -m attnviz generate "PROMPT"         a decoder writes token by token: attention, alternatives, cache

Exit status 0 on success, 2 on bad input or a model that cannot be loaded (one line on
stderr, no traceback).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from ._cli import Parser, guarded, load_model, read_text, with_text, write_json
from .models import DEFAULT_MAX_TOKENS, EMBEDDED_MODEL, ModelLoadError
from .result import Attention


def build_parser() -> argparse.ArgumentParser:
    p = Parser("attnviz", "Attention weights of every layer and head for a text.")
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
    p.add_argument(
        "--json",
        metavar="OUT",
        help="write the result as JSON to OUT ('-' for stdout); weights with 6 significant digits",
    )
    p.add_argument(
        "--layer", type=int, metavar="L", help="only layer L: --json writes heads x n x n, the summary shows L"
    )
    p.add_argument("--head", type=int, metavar="H", help="with --layer: only head H (--json writes n x n)")
    p.add_argument("--html", metavar="OUT", help="write the all-heads view as a self-contained HTML file")
    p.add_argument(
        "--next", type=int, metavar="K", help='a decoder\'s K likeliest next tokens (--json adds them as "next")'
    )
    return p


def to_json(att: Attention) -> dict[str, object]:
    """The --json document as a Python dict (the CLI itself writes the same shape faster, with
    export.weights_json)."""
    from .export import weights_json

    return {**json.loads(weights_json(att)), "text": att.text}


# subcommand -> module with main(argv) -> int, imported only when asked for (Ray, training code)
SUBCOMMANDS = {"corpus": "attnviz.corpus.cli", "evidence": "attnviz.explain.cli", "train": "attnviz.training.cli"}
SUBCOMMANDS["long"] = "attnviz.long.cli"  # attention of a long text, every head
SUBCOMMANDS["generate"] = "attnviz.generation.cli"  # a decoder writing token by token


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in SUBCOMMANDS:
        run = importlib.import_module(SUBCOMMANDS[argv[0]]).main
        return int(run(argv[1:]))
    if argv and argv[0] == "analyse":  # explicit form, for a text that is itself "corpus" or "train"
        argv = argv[1:]
    return analyse(argv)


def analyse(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.head is not None and args.layer is None:
        parser.error("--head needs --layer")

    def body() -> int:
        text = read_text(args.text)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # undecodable bytes in argv or stdin arrive as lone surrogates
            raise ValueError("text is not valid UTF-8") from None
        scratch_only = args.no_scale or args.no_positions or args.causal or args.random_weights
        if scratch_only and args.model != "scratch":
            raise ValueError("--no-scale, --no-positions, --causal and --random-weights need --model scratch")
        if args.max_tokens < 2:
            raise ValueError("--max-tokens must be at least 2")
        if args.next is not None and not 1 <= args.next <= 1000:
            raise ValueError("--next must be between 1 and 1000")
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
        if args.layer is not None and not 0 <= args.layer < att.n_layers:
            raise ValueError(f"--layer {args.layer} is out of range: this model has layers 0..{att.n_layers - 1}")
        if args.head is not None and not 0 <= args.head < att.n_heads:
            raise ValueError(f"--head {args.head} is out of range: this model has heads 0..{att.n_heads - 1}")
        following = None
        if args.next is not None:
            from .nextword import predict

            following = predict(model, text, k=args.next, max_tokens=args.max_tokens)
        if att.truncated:
            print(f"attnviz: note: input truncated to {att.n} of {att.n_input_tokens} tokens", file=sys.stderr)
        for note in att.notes:  # e.g. the accelerator ran out of memory and the CPU answered
            print(f"attnviz: note: {note}", file=sys.stderr)
        _write_outputs(att, args, following)
        if not args.json and not args.html:
            _print_summary(att, args.layer, args.head)
            for token, p in following or []:
                print(f"  next {token!r} {p:.3f}")
        return 0

    return guarded("attnviz", body, (ValueError, ModelLoadError, OSError))


def _write_outputs(att: Attention, args: argparse.Namespace, following: list[tuple[str, float]] | None) -> None:
    from .export import figure_html, weights_json  # plotly loads only when something is written

    if args.json:
        payload = with_text(weights_json(att, layer=args.layer, head=args.head), att.text)
        if following is not None:  # the document is one object: "next" goes in before its closing brace
            pairs = json.dumps([[t, round(p, 6)] for t, p in following], ensure_ascii=True).encode("ascii")
            payload = payload.rstrip()[:-1] + b', "next": ' + pairs + b"}"
        write_json(args.json, payload)
    if args.html:
        from .views import model_view

        page = figure_html(model_view(att), {"text": att.text, "model": att.model})
        Path(args.html).write_text(page, encoding="utf-8")


def _print_summary(att: Attention, layer: int | None, head: int | None) -> None:
    print(f"{att.model} on {att.device}: {att.n_layers} layers x {att.n_heads} heads, {att.n} tokens")
    print(" ".join(att.tokens))
    if layer is not None:
        print(f"layer {layer}, " + ("mean of heads" if head is None else f"head {head}") + ":")
    shown = att.head(att.n_layers - 1 if layer is None else layer, head)  # default: last layer, mean of heads
    for i, tok in enumerate(att.tokens):
        j = int(shown[i].argmax())
        print(f"  {tok!s:>14} -> {att.tokens[j]} ({shown[i, j]:.2f})")


if __name__ == "__main__":
    sys.exit(main())
