"""``easl next``: the open HITs of the current iteration (starting the next iteration when it is complete)."""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

from easl_toolkit.core.errors import EaslError
from easl_toolkit.tui.commands.options import add_raw_cells


def register(subparsers) -> None:
    """Add the ``next`` sub-command to the ``easl`` parser."""
    p = subparsers.add_parser(
        "next",
        help="write the open HITs of the current iteration",
        description="Write the HITs of the current iteration that still lack scores. When every HIT of the current "
        "iteration is complete, the next iteration is selected first (EASL: Algorithm 1; aware: uniform "
        "passes, then allocation by rank uncertainty, and no new iteration once the stopping rule of "
        "--stop-at is met: no HITs, the reason on stderr). Output: "
        "JSONL (one HIT per line: hit_id, iteration, items) or CSV or Parquet in long form (hit_id, "
        "iteration, position, item_id, text, extra item columns), by the extension of --output; JSONL on "
        "stdout by default.",
    )
    p.add_argument("project", metavar="PROJECT", help="the project file")
    p.add_argument(
        "--output", metavar="FILE", help="write the HITs to FILE (.jsonl, .csv or .parquet) instead of stdout"
    )
    add_raw_cells(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``easl next``; returns the exit status (user errors raise ``EaslError``)."""
    from easl_toolkit.core.store import Project
    from easl_toolkit.core.store.hit_columns import HIT_FORMATS

    fmt = HIT_FORMATS.get(Path(args.output).suffix.lower()) if args.output else "jsonl"
    if fmt is None:
        from easl_toolkit.core.tables import write_format

        fmt = write_format(args.output)  # (an unknown extension: the error names the known ones)
        raise EaslError(f"{args.output}: HITs are written as .jsonl, .csv or .parquet, not {fmt}.")
    stop = None
    with tempfile.TemporaryDirectory() as tmp:
        # stdout: the records are written to a file first, and copied out once the iteration is committed
        output = args.output or os.path.join(tmp, "hits.jsonl")
        with Project.open(args.project) as project:
            n_hits = project.next_hits_file(output, fmt, raw_cells=args.raw_cells)
            iteration = project.iteration()
            if not n_hits:
                stop = project.stop_figures()  # (None for a model without a stopping rule)
        if args.output is None:
            _copy_out(output)
    where = f" to {args.output}" if args.output else ""
    if stop is not None and stop["reached"]:
        print(
            f"stopped: no new iteration, the stopping rule is met ({stop['reason']}); "
            f"`easl status {args.project}` shows the figures",
            file=sys.stderr,
        )
        return 0
    print(f"iteration {iteration}: {n_hits} open HITs{where}", file=sys.stderr)
    return 0


def _copy_out(path: str) -> None:
    """Copy the UTF-8 text file ``path`` to stdout: its bytes when stdout writes UTF-8, else as text."""
    out = sys.stdout
    with open(path, "rb") as text:
        if (out.encoding or "").lower().replace("-", "") == "utf8":
            out.flush()
            shutil.copyfileobj(text, out.buffer)
        else:
            shutil.copyfileobj(io.TextIOWrapper(text, encoding="utf-8", newline=""), out)
    out.flush()
