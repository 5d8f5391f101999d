"""The ``easl`` command line (each command is documented in the README, "User guide"; exit statuses below).

Each sub-command lives in ``tui/commands/<name>.py`` and exposes ``register(subparsers)``, which adds its parser
and sets ``func`` to a callable taking the parsed ``argparse.Namespace`` and returning an exit status.

Start-up stays instant: building the parser imports only the command modules, and those import nothing but the
standard library and ``core.errors`` at module level; numpy, pandas, SciPy, rich, Textual, the Label Studio SDK
and the web server are imported inside the ``func`` that needs them (``bench/bench_cli.py`` measures it,
``tests/test_cli_speed.py`` guards it).

Exit status: 0 success, 1 a domain error (``core.errors.EaslError``: one ``error: ...`` message on stderr, no
traceback), 2 usage error (argparse), 130 interrupted (Ctrl+C).
"""
from __future__ import annotations

import argparse
import importlib
import sys

from core.errors import EaslError

# Order here is the order in ``easl --help``.
COMMANDS = [
    "init", "next", "ingest", "status", "export", "verify", "evaluate", "simulate", "demo", "ls", "serve", "tui",
]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def build_parser() -> argparse.ArgumentParser:
    """The ``easl`` parser with every sub-command registered (argparse only; no heavy imports)."""
    parser = argparse.ArgumentParser(
        prog="easl",
        description="Collect scalar labels efficiently (EASL) and evaluate scoring systems against noisy human labels.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"tui.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command and return its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 on a usage error, 0 after --help
    try:
        return int(args.func(args) or EXIT_OK)
    except EaslError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
