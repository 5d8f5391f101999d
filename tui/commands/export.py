"""``easl export``: estimates per item and, optionally, the raw ratings in long form."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from easl_toolkit.tui.commands.options import add_raw_cells


def register(subparsers) -> None:
    """Add the ``export`` sub-command to the ``easl`` parser."""
    p = subparsers.add_parser(
        "export",
        help="write estimates (and raw ratings) as CSV, JSONL or Parquet",
        description="Write one row per item: item_id, estimate, mean, variance, ci_low, ci_high, n_annotations, "
        "then the item's text and extra columns. estimate: the item's score (aware, the default method: the score "
        "a typical annotator would give the item, from the model that corrects each annotator's offset, slope and "
        "noise; EASL and RA: the posterior mode; TrueSkill: mu; DA: the mean of its scores); mean: the posterior "
        "mean, which differs from the estimate for EASL and RA alone (their Beta posterior is skewed). Values are "
        "on the project's score range; the variance is scaled by (max - min)^2. --ratings writes the live ratings "
        "in long form: item_id, annotator, score, hit_id, iteration, annotation_id, created_at. The format follows the "
        "extension (.csv, .jsonl, .parquet). Aware projects add rank_low, rank_high (the 95% interval "
        "of the item's rank, 1 = highest) after n_annotations; --annotators writes their annotator "
        "table.",
    )
    p.add_argument("project", metavar="PROJECT", help="the project file")
    p.add_argument("--output", required=True, metavar="FILE", help="estimates file (.csv, .jsonl or .parquet)")
    p.add_argument("--ratings", metavar="FILE", help="also write the raw ratings in long form to FILE")
    p.add_argument(
        "--annotators",
        metavar="FILE",
        help="aware projects: also write the annotator table (annotator, n_scores, offset, slope, noise, "
        "weight, agreement, p_random, scatter, spread, flag, reason) to FILE",
    )
    add_raw_cells(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``easl export``; returns the exit status (user errors raise ``EaslError``)."""
    from easl_toolkit.core.outputs import atomic_outputs, check_outputs
    from easl_toolkit.core.store import Project

    paths = [args.output, args.ratings, getattr(args, "annotators", None)]
    for path in paths:  # a .csv needs no check (nor core.tables, which imports pandas)
        if path and Path(path).suffix.lower() != ".csv":
            from easl_toolkit.core.tables import write_format

            write_format(path)
    check_outputs(paths, protect=[args.project])  # before any work: never the project
    status = _status()
    with Project.open(args.project, readonly=True) as project:
        with status("computing estimates"):
            # a .csv of estimates is written from columns (no pandas DataFrame when the items have no extra
            # columns); the other formats from the DataFrame
            if Path(args.output).suffix.lower() == ".csv":
                estimates = project.estimates_table()
                n_estimates = estimates.n_rows
            else:
                estimates = project.estimates()
                n_estimates = len(estimates)
        outputs = [(estimates, args.output)]
        msg = f"wrote {n_estimates} estimates to {args.output}"
        if args.ratings:
            ratings = project.ratings()
            outputs.append((ratings, args.ratings))
            msg += f" and {len(ratings)} ratings to {args.ratings}"
        if getattr(args, "annotators", None):
            from easl_toolkit.tui.commands.status import annotator_table_of

            table = annotator_table_of(project, args.project)
            outputs.append((table, args.annotators))
            msg += f" and {len(table)} annotators to {args.annotators}"
        writing = status(f"writing {', '.join(str(path) for _, path in outputs)}")
        with writing, atomic_outputs([path for _, path in outputs]) as temps:  # all or none
            for (data, path), tmp in zip(outputs, temps):
                if hasattr(data, "write_csv"):
                    data.write_csv(tmp, path, raw_cells=args.raw_cells)
                else:
                    from easl_toolkit.core.tables import write_table_to

                    write_table_to(data, tmp, path, raw_cells=args.raw_cells)
    print(msg)
    return 0


def _status() -> Callable[[str], AbstractContextManager[object]]:
    """A spinner with a message on stderr while a step runs (rich's ``Console.status``) when stderr is a terminal;
    otherwise nothing is shown, and rich is not imported (a tenth of a second)."""
    if not sys.stderr.isatty():
        return lambda _message: contextlib.nullcontext()
    from rich.console import Console

    return Console(stderr=True).status
