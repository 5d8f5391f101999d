"""``easl verify``: SQLite's integrity check, then replay the observation log and compare with the cached state;
``--salvage OUT`` copies every readable record of a damaged project into a new project file."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    """Add the ``verify`` sub-command to the ``easl`` parser."""
    p = subparsers.add_parser(
        "verify",
        help="replay the log and compare with the cached state",
        description="Run SQLite's integrity check on the project file (a damaged file is reported with its damaged "
        "pages), then replay the whole observation log from scratch and compare the result with the "
        "cached model state (largest absolute difference, ok within 1e-9), the live-observation index "
        "and the HIT statuses. Exit 0 when everything agrees, 1 otherwise. --salvage OUT copies every "
        "readable observation, item, HIT and record into a new project file OUT and rebuilds its state "
        "by replay (the way to recover from a damaged file).",
    )
    p.add_argument("project", metavar="PROJECT", help="the project file")
    p.add_argument(
        "--salvage",
        metavar="OUT",
        help="copy every readable record into the new project file OUT (never overwritten) and rebuild it",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``easl verify``; returns the exit status (user errors raise ``EaslError``)."""
    from easl_toolkit.core.store import Project
    from easl_toolkit.core.store.salvage import damaged_pages, damaged_tables, integrity_problems, unreadable_pages

    problems = integrity_problems(args.project)
    if args.salvage:
        return _salvage(args, problems)
    if problems:
        pages = damaged_pages(problems)
        tables = damaged_tables(args.project) if not pages else []
        if tables:
            pages = unreadable_pages(args.project, tables)
            problems[0] += f" (in {', '.join(tables)})"
        where = (
            f" (damaged pages: {', '.join(map(str, pages[:20]))}{', ...' if len(pages) > 20 else ''})" if pages else ""
        )
        print(
            f"{args.project}: the project file is damaged: SQLite's integrity check reports {len(problems)} "
            f"problem{'s' if len(problems) != 1 else ''}{where}; first: {problems[0]}. Copy every readable "
            f"observation into a new project with: easl verify {args.project} --salvage NEW.easl"
        )
        return 1
    with Project.open(args.project, readonly=True) as project:
        result = project.verify()
    if result["ok"]:
        print(
            f"ok: the cached state equals the replay of {result['n_observations']} live observations "
            f"({result['n_log_records']} log records; max abs diff {result['max_abs_diff']:.3g})"
        )
        return 0
    problems = []
    if result["max_abs_diff"] > result["tolerance"]:
        worst = ", ".join(f"{k} {v:.3g}" for k, v in result["arrays"].items() if v > result["tolerance"])
        problems.append(f"cached state differs from the replay by up to {result['max_abs_diff']:.3g} ({worst})")
    if not result["live_ok"]:
        problems.append("the live-observation index differs from the log")
    if not result["seq_ok"]:
        problems.append("the cached state does not reflect the end of the log")
    if not result["hits_ok"]:
        problems.append("some HIT statuses disagree with the live observations")
    if not result.get("live_arrays_ok", True):
        problems.append("the live log kept for the annotator-aware refits differs from the live-observation index")
    print(f"{args.project}: verification FAILED: " + "; ".join(problems))
    return 1


def _salvage(args: argparse.Namespace, problems: list[str]) -> int:
    from easl_toolkit.core.outputs import check_outputs
    from easl_toolkit.core.store.salvage import salvage

    check_outputs([args.salvage], protect=[args.project])
    state = "damaged" if problems else "sound"
    report = salvage(args.project, args.salvage)
    copied = report.copied
    lost = ""
    if report.damaged_tables:
        lost = f"; unreadable parts in {', '.join(report.damaged_tables)}"
    if report.missing_log_positions:
        lost += f"; {report.missing_log_positions} log records could not be read"
    dropped = "".join(f"; {n} {t} rows dropped (they named lost rows)" for t, n in report.dropped.items())
    check = "verified" if report.verify.get("ok") else "verification FAILED"
    print(
        f"salvaged {args.project} ({state}) into {args.salvage}: {copied.get('observations', 0)} observations, "
        f"{copied.get('items', 0)} items, {copied.get('hits', 0)} HITs, {copied.get('events', 0)} events{lost}"
        f"{dropped}; state rebuilt by replay ({check}: {report.verify.get('n_observations', 0)} live "
        f"observations)"
    )
    return 0 if report.verify.get("ok") else 1
