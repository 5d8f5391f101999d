"""``easl ingest``: validate and add annotations (CSV, TSV, JSONL or Parquet) to a project."""

from __future__ import annotations

import argparse
import sys

from core.errors import UserError
from tui.commands.options import add_raw_cells


def register(subparsers) -> None:
    """Add the ``ingest`` sub-command to the ``easl`` parser."""
    p = subparsers.add_parser(
        "ingest",
        help="add annotations (item_id, score, optional hit_id, annotator, annotation_id)",
        description="Validate annotations and add them to the project in one transaction. Columns: item_id, score "
        "(on the project's score range), optional hit_id, annotator, annotation_id, created_at. The "
        "idempotency key is (annotation_id, item_id) when annotation_id is given, else (hit_id, "
        "item_id, annotator): the same key with the same score changes nothing, with a new score it "
        "supersedes the old one. If any row is invalid the whole file is refused and every bad row is "
        "listed, unless --skip-invalid.",
    )
    p.add_argument("project", metavar="PROJECT", help="the project file")
    p.add_argument("file", metavar="FILE", help="annotations file (.csv, .tsv, .jsonl or .parquet)")
    p.add_argument(
        "--skip-invalid",
        action="store_true",
        help="ingest the valid rows and write the invalid ones, with reasons, to the rejects file",
    )
    p.add_argument(
        "--rejects",
        metavar="FILE",
        help="where --skip-invalid writes rejected rows (.csv, .jsonl or .parquet; default: PROJECT.rejects.csv)",
    )
    add_raw_cells(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``easl ingest``; returns the exit status (user errors raise ``UserError``; refused rows get the hint
    of --skip-invalid)."""
    from core.errors import InvalidRows

    try:
        return _run(args)
    except InvalidRows as exc:
        head, sep, rest = str(exc).partition(":\n")
        raise UserError(
            f"{head} (use --skip-invalid to ingest the valid rows and write the rejects to a file){sep}{rest}"
        ) from None


def _run(args: argparse.Namespace) -> int:
    import contextlib
    import os

    from rich.console import Console

    from core.outputs import check_outputs, temporary_path
    from core.store import Project
    from core.store.deferred import LARGE_INPUT_BYTES
    from core.tables import check_input, iter_table, read_table, write_format, write_table_to

    err = Console(stderr=True)
    check_input(args.file)  # before the project is opened: an input that is not a regular file may never end
    target = args.rejects or f"{args.project}.rejects.csv"
    if args.skip_invalid:  # check where the rejects go before anything is read or ingested: never the project
        write_format(target)
        check_outputs([target], protect=[args.project])
    tmp = None

    def write_rejects(report) -> None:  # inside the transaction: a failed write leaves the project as it was
        nonlocal tmp
        if report.rejected:
            tmp = temporary_path(target)
            write_table_to(report.rejects, tmp, target, raw_cells=args.raw_cells)

    try:
        with Project.open(args.project) as project:
            # chunks keep memory flat; methods that compare whole HITs validate the file as one batch
            chunks = [read_table(args.file)] if project.model.needs_whole_hit else iter_table(args.file)
            with err.status(f"validating and ingesting {args.file}"):
                report = project.ingest_chunks(
                    chunks,
                    source=args.file,
                    skip_invalid=args.skip_invalid,
                    before_commit=write_rejects,
                    defer_live=os.path.getsize(args.file) >= LARGE_INPUT_BYTES,
                )
            if tmp is not None:
                os.replace(tmp, target)
                tmp = None
            open_hits = project.n_open_hits()
            iteration = project.iteration()
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    msg = (
        f"ingested {args.file}: {report.n_rows} rows: {report.new} new, {report.duplicate} duplicate, "
        f"{report.superseded} superseded, {report.rejected} rejected"
    )
    if report.rejected:
        msg += f" (written with reasons to {target})"
    print(msg)
    hint = f" (start the next one with: easl next {args.project})" if open_hits == 0 else ""
    print(f"iteration {iteration}: {open_hits} HITs still open{hint}", file=sys.stderr)
    return 0
