"""The ``easl`` command line (contract: DESIGN.md, "CLI contract").

Each sub-command lives in ``tui/commands/<name>.py`` and exposes ``register(subparsers)``, which adds its parser
and sets ``func`` to a callable taking the parsed ``argparse.Namespace`` and returning an exit status.
Exit status: 0 success, 1 user error (``core.errors.UserError``), 2 usage error (argparse).
"""
from __future__ import annotations

import argparse
import importlib
import sys

from core.errors import UserError

# Order here is the order in ``easl --help``.
COMMANDS = [
    "init", "next", "ingest", "status", "export", "verify", "evaluate", "simulate", "demo", "ls", "serve", "tui",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="easl",
        description="Collect scalar labels efficiently (EASL) and evaluate scoring systems against noisy human labels.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"tui.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
