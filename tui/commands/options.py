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
