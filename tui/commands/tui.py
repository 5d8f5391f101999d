"""``easl tui [PROJECT]``: the terminal app (Annotate, Monitor, Evaluate, Export)."""

from __future__ import annotations

import argparse
from pathlib import Path

from easl_toolkit.core.errors import EaslError

HELP = """\
Open the terminal app. With a project file it opens on Annotate (asking your annotator name once); with
--monitor on the live Monitor. With a data file (CSV, TSV, JSONL, Parquet) or nothing, it opens on Evaluate,
where F6 opens a file. Keys are shown in the footer; ? shows the keys of the current screen; Ctrl+Q quits.
"""


def register(subparsers) -> None:
    """Add the ``tui`` sub-command."""
    p = subparsers.add_parser(
        "tui",
        help="terminal app: annotate, monitor, evaluate, export",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "project",
        nargs="?",
        metavar="PROJECT",
        help="project file (.easl), or a data file to evaluate; omit to pick one in the app",
    )
    p.add_argument("--monitor", action="store_true", help="open on the live Monitor instead of Annotate")
    p.add_argument(
        "--annotator",
        metavar="NAME",
        help="annotator name for this session (default: the remembered one, else asked once)",
    )
    p.add_argument(
        "--poll",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="seconds between the Monitor's reads of the project file (default 1.0)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the arguments, then run the app until the user quits."""
    from easl_toolkit.core.tables import READ_FORMATS
    from easl_toolkit.tui.app import EaslApp
    from easl_toolkit.tui.settings import clean_annotator

    if args.poll <= 0:
        raise EaslError(f"--poll: must be a positive number of seconds, got {args.poll}.")
    annotator = clean_annotator(args.annotator) if args.annotator is not None else None
    project = data_file = None
    start = "monitor" if args.monitor else "annotate"
    if args.project is not None:
        path = Path(args.project)
        if not path.is_file():
            raise EaslError(f"{path}: no such file; create a project with `easl init {path} --items FILE`.")
        if path.suffix.lower() in READ_FORMATS:
            if args.monitor:
                raise EaslError(f"{path}: --monitor needs a project file, not a data file.")
            data_file, start = path, "evaluate"
        else:
            from easl_toolkit.core.store import Project

            Project.open(path, readonly=True).close()  # a clear error now rather than inside the app
            project = path
    else:
        if args.monitor:
            raise EaslError("--monitor: name the project file to monitor, e.g. `easl tui demo.easl --monitor`.")
        start = "evaluate"
    app = EaslApp(project, start=start, annotator=annotator, poll_interval=args.poll, data_file=data_file)
    app.run()
    return int(app.return_code or 0)
