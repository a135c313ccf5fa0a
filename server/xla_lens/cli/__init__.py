"""`xla-lens` command line: check, fix, run, serve, rules."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from .. import __version__

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors are exit 2, no traceback
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"xla-lens: error: {message}\n")


def _selection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--target",
        choices=["legacy", "modern", "auto"],
        help="torch_xla dialect to emit (default: auto, from the interpreter's torch_xla)",
    )
    p.add_argument(
        "--select", help="only these rule codes or prefixes, comma separated (e.g. XLA1,XLA401)"
    )
    p.add_argument("--ignore", help="skip these rule codes or prefixes, comma separated")
    p.add_argument(
        "--interpreter",
        help="python whose torch_xla decides target=auto, read from its package metadata"
        " without running it (default: this one)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="xla-lens", description="Move CUDA PyTorch training scripts to PyTorch/XLA."
    )
    parser.add_argument("--version", action="version", version=f"xla-lens {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    check = sub.add_parser("check", help="report conversion steps and lazy-mode pitfalls")
    check.add_argument("paths", nargs="+", metavar="PATH")
    check.add_argument("--format", choices=["text", "json", "sarif"], default="text")
    check.add_argument(
        "--fix-plan",
        action="store_true",
        help="run the rounds `fix` runs (in memory) to say which review fixes `fix` applies "
        "once other fixes are in (slower: each file is fixed several times over)",
    )
    _selection_args(check)

    fix = sub.add_parser("fix", help="apply every safe fix in place (or show a diff)")
    fix.add_argument("paths", nargs="+", metavar="PATH")
    fix.add_argument("--diff", action="store_true", help="print a unified diff and write nothing")
    fix.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="also apply fixes marked for review (they may change what the script does)",
    )
    _selection_args(fix)

    run = sub.add_parser(
        "run", help="run a script under torch_xla and report what XLA compiled", add_help=False
    )
    run.add_argument("rest", nargs=argparse.REMAINDER)

    sub.add_parser("serve", help="start the language server on stdio")

    rules = sub.add_parser("rules", help="list the rules, or print one rule's page")
    rules.add_argument("code", nargs="?", help="a rule code (XLA101): print its documentation")
    rules.add_argument("--format", choices=["text", "markdown"], default="text")
    return parser


def _tune_collector() -> None:
    """Young collections in larger batches, and never walking what is alive for the whole run
    (the modules and rule tables): an analysis allocates hundreds of thousands of tree and
    model objects, and the default thresholds (every 700) walked them over and over
    (`check` over the dev corpus: 1.15 s -> 1.07 s)."""
    import gc

    from ..engine import analysis  # noqa: F401 - loaded now, so frozen with the rest

    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def main(argv: Sequence[str] | None = None) -> int:
    from_command_line = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    # `run` forwards everything after it untouched (its own flags and the script's `-- ARGS`).
    if argv and argv[0] == "run":
        from ..runner.cli import run_main

        return run_main(argv[1:])
    args = parser.parse_args(argv)
    if args.command in ("check", "fix") and not os.environ.get("XLA_LENS_DEBUG"):
        # The commands report a crashed rule in one line themselves; without a handler
        # logging's last resort would also dump its traceback on the user's terminal.
        logger = logging.getLogger("xla_lens")
        if not logger.handlers:
            logger.addHandler(logging.NullHandler())
    if args.command in ("check", "fix") and from_command_line:
        # Only for a process of its own: frozen objects stay frozen for the process's life.
        _tune_collector()
    try:
        if args.command == "check":
            from .commands import check_command

            return check_command(args)
        if args.command == "fix":
            from .commands import fix_command

            return fix_command(args)
        if args.command == "serve":
            import gc

            # Nothing to collect while the server's modules load (~50 ms of the cold
            # start); the server's main switches the collector back on, tuned.
            gc.disable()
            from ..lsp.server import main as serve

            serve()
            return EXIT_OK
        if args.command == "rules":
            from .commands import rules_command

            return rules_command(args)
    except KeyboardInterrupt:
        print("xla-lens: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `xla-lens check ... | head`: the reader left; that is not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    parser.error(f"unknown command {args.command}")
    return EXIT_ERROR
