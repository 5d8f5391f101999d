"""Argparse types shared by the commands: a bad value is a usage error (exit 2) naming the option's need."""

from __future__ import annotations

import argparse
import math


def port(text: str) -> int:
    """A TCP port, 1-65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is between 1 and 65535, got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (NaN and infinity refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"needs a finite number > 0, got {text}")
    return value


def nonnegative_int(text: str) -> int:
    """An integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"needs an integer >= 0, got {value}")
    return value


RAW_CELLS_HELP = (
    "write CSV/TSV text cells exactly as stored; by default a cell that a spreadsheet would run as a formula "
    "(beginning with =, +, -, @, tab or carriage return, and not a plain number) gets a leading single quote "
    "(OWASP's advice against CSV injection)"
)


def add_raw_cells(parser: argparse.ArgumentParser) -> None:
    """Add ``--raw-cells`` (keep CSV cells a spreadsheet would execute as they are) to a command that writes CSV."""
    parser.add_argument("--raw-cells", action="store_true", help=RAW_CELLS_HELP)
