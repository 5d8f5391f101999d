"""``easl ingest``: validate and add annotations (CSV, TSV, JSONL or Parquet) to a project."""

from __future__ import annotations

import argparse
import sys

from easl_toolkit.core.errors import EaslError
from easl_toolkit.tui.commands.options import add_raw_cells


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
    p.add_argument(
        "--commit-every",
        metavar="ROWS",
        type=_rows,
        help="check the whole file first, then add it in transactions of at least ROWS rows, so that the Label "
        "Studio service applies its webhooks between them; a killed ingest is completed by running it again "
        f"(0: one transaction; default: {SLICE_ROWS:,} for a file of {LARGE_MB} MB or more into a project linked "
        "to Label Studio, else 0)",
    )
    add_raw_cells(p)
    p.set_defaults(func=run)


#: rows per transaction of a large file ingested into a project linked to Label Studio (``--commit-every``)
SLICE_ROWS = 1_000_000
LARGE_MB = 96  #: ``core.store.deferred.LARGE_INPUT_BYTES`` in MB (the CLI does not import core to print --help)
PAUSE_S = 0.2  #: the pause after each slice: the service's writer tries the lock every 50 ms, its worker every 100
MAX_PAUSE_S = 1.0  #: the longest pause after a slice, while the service's queue is not empty


def _rows(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


#: How an annotation without an annotator is named everywhere (status, monitor, evaluate --project).
NO_ANNOTATOR = "(none)"


class AnonymousRows:
    """Counts the rows of the input without an annotator (no ``annotator`` column, or an empty cell) as the chunks
    pass on to the ingest; the store keeps them as one anonymous annotator, which the warning says once."""

    def __init__(self) -> None:
        self.n = 0

    def counted(self, chunks):
        """``chunks`` (``core.tables.Table``), counted; a second pass over the file (the sliced ingest's check,
        then its ingest) counts afresh."""
        self.n = 0
        for chunk in chunks:
            self.n += _blank_annotators(chunk)
            yield chunk

    def warning(self, source: str) -> str:
        return (
            f"{self.n:,} row(s) of {source} have no annotator: their scores count as one anonymous annotator, "
            f"shown as {NO_ANNOTATOR} (an aware project fits one offset, slope and noise to all of them); give "
            "each row its annotator to tell them apart"
        )


def _blank_annotators(chunk) -> int:
    """Rows of one ``Table`` whose annotator is missing or blank (on Arrow's columns when the reader made them)."""
    frame = chunk.frame
    if "annotator" not in frame.columns:
        return len(frame)
    arrow = (chunk.arrow or {}).get("annotator")
    if arrow is not None:
        import pyarrow.compute as pc

        blank = pc.equal(pc.utf8_trim_whitespace(arrow), "")
        return int(arrow.null_count) + int(pc.sum(blank).as_py() or 0)
    column = frame["annotator"]
    return int(column.isna().sum() + (column.dropna().astype(str).str.strip() == "").sum())


def run(args: argparse.Namespace) -> int:
    """Run ``easl ingest``; returns the exit status (user errors raise ``EaslError``; refused rows get the hint
    of --skip-invalid)."""
    from easl_toolkit.core.errors import InvalidRows

    try:
        return _run(args)
    except InvalidRows as exc:
        head, sep, rest = str(exc).partition(":\n")
        raise EaslError(
            f"{head} (use --skip-invalid to ingest the valid rows and write the rejects to a file){sep}{rest}"
        ) from None


def _run(args: argparse.Namespace) -> int:
    import contextlib
    import os

    from rich.console import Console

    from easl_toolkit.core.outputs import check_outputs, temporary_path
    from easl_toolkit.core.store import Project
    from easl_toolkit.core.store.deferred import LARGE_INPUT_BYTES
    from easl_toolkit.core.tables import check_input, iter_table, read_table, write_format, write_table_to

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
            large = os.path.getsize(args.file) >= LARGE_INPUT_BYTES
            rows = _slice_rows(args, project, large)
            anonymous = AnonymousRows()
            if rows:
                with err.status(f"checking {args.file}, then ingesting it {rows:,} rows at a time"):
                    report = project.ingest_slices(
                        lambda: anonymous.counted(iter_table(args.file)),
                        source=args.file,
                        rows=rows,
                        skip_invalid=args.skip_invalid,
                        pause=_drain(project, args.project),
                        defer_live=large,
                    )
                write_rejects(report)
            else:
                # chunks keep memory flat; models that compare whole HITs validate the file as one batch
                chunks = [read_table(args.file)] if project.model.whole_submissions else iter_table(args.file)
                chunks = anonymous.counted(chunks)
                with err.status(f"validating and ingesting {args.file}"):
                    report = project.ingest_chunks(
                        chunks,
                        source=args.file,
                        skip_invalid=args.skip_invalid,
                        before_commit=write_rejects,
                        defer_live=large,
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
    if anonymous.n:
        print(f"warning: {anonymous.warning(args.file)}", file=sys.stderr)
    if rows:
        print(f"checked {args.file} whole, then ingested it in {report.transactions} transactions", file=sys.stderr)
    hint = f" (start the next one with: easl next {args.project})" if open_hits == 0 else ""
    print(f"iteration {iteration}: {open_hits} HITs still open{hint}", file=sys.stderr)
    return 0


def _slice_rows(args: argparse.Namespace, project, large: bool) -> int:
    """The rows per transaction of ``easl ingest`` (0: one transaction): ``--commit-every``, or by default
    :data:`SLICE_ROWS` for a large file into a project linked to Label Studio."""
    from easl_toolkit.easl_plugin import bookkeeping as bk

    whole = project.model.whole_submissions
    if args.commit_every is None:
        linked = project.get_meta(bk.KEY_PROJECT_ID) is not None
        return SLICE_ROWS if large and linked and not whole else 0
    if args.commit_every and whole:
        raise EaslError(
            f"--commit-every: the method {project.hyper.method!r} compares the scores of whole HITs in their "
            "order, so its files are ingested in one transaction (use --commit-every 0)"
        )
    return args.commit_every


def _drain(project, path: str):
    """What ``easl ingest`` does between two slices: wait :data:`PAUSE_S`, then while the Label Studio service's
    queue (its journal next to the project, the pending events) is not empty, :data:`MAX_PAUSE_S` in all at most."""
    import time

    from easl_toolkit.easl_plugin.journal import journal_path

    journal = journal_path(path)

    def queued() -> bool:
        try:
            with open(journal, "rb") as f:
                if f.read(1) not in (b"", b"\0"):
                    return True
        except OSError:
            pass
        return project.event_counts().get("pending", 0) > 0

    def pause() -> None:
        end = time.monotonic() + MAX_PAUSE_S
        time.sleep(PAUSE_S)
        while queued() and time.monotonic() < end:
            time.sleep(0.05)

    return pause
