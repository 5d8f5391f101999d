"""``easl next``: the open HITs of the current iteration (starting the next iteration when it is complete)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from core.errors import UserError
from tui.commands.options import add_raw_cells


def register(subparsers) -> None:
    """Add the ``next`` sub-command to the ``easl`` parser."""
    p = subparsers.add_parser(
        "next",
        help="write the open HITs of the current iteration",
        description="Write the HITs of the current iteration that still lack scores. When every HIT of the current "
        "iteration is complete, the next iteration is selected first (EASL: Algorithm 1; aware: uniform "
        "passes, then allocation by rank uncertainty, and no new iteration once the stopping rule of "
        "--stop-at is met: no HITs, the reason on stderr). Output: "
        "JSONL (one HIT per line: hit_id, iteration, items) or CSV in long form (hit_id, iteration, "
        "position, item_id, text, extra item columns), by the extension of --output; JSONL on stdout "
        "by default.",
    )
    p.add_argument("project", metavar="PROJECT", help="the project file")
    p.add_argument("--output", metavar="FILE", help="write the HITs to FILE (.jsonl or .csv) instead of stdout")
    add_raw_cells(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``easl next``; returns the exit status (user errors raise ``UserError``)."""
    from core.store import Project
    from core.store.memory import keep_freed_memory

    keep_freed_memory()  # a large iteration allocates and frees hundreds of MB: reuse them, no fresh pages
    hits: list[dict[str, object]] = []

    fmt = None
    if args.output:
        # a .csv file is written by Arrow from columns (no pandas); other names are checked by core.tables
        if Path(args.output).suffix.lower() == ".csv":
            fmt = "csv"
        else:
            from core.tables import write_format

            fmt = write_format(args.output)
        if fmt not in ("jsonl", "csv"):
            raise UserError(f"{args.output}: HITs are written as .jsonl or .csv, not {fmt}.")
    stop = None
    with Project.open(args.project) as project:
        if fmt == "csv":  # column-wise, without a record per item, written before the commit, renamed after
            n_hits = project.next_hits_csv(args.output, raw_cells=args.raw_cells)
        else:
            hits = project.next_hits()
            n_hits = len(hits)
        iteration = project.iteration()
        if not n_hits and project.hyper.method == "aware":
            stop = project.stop_figures()
    if args.output is None:
        out = sys.stdout
        for h in hits:
            out.write(json.dumps(h, ensure_ascii=False) + "\n")
        out.flush()
    elif fmt == "jsonl":
        from core.tables import write_jsonl_records

        write_jsonl_records(hits, args.output)
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
