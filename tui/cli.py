"""The ``easl`` command line (each command is documented in ``docs/guides/`` and
``docs/reference/commands.md``; exit statuses below).

Each sub-command lives in ``tui/commands/<name>.py`` and exposes ``register(subparsers)``, which adds its parser
and sets ``func`` to a callable taking the parsed ``argparse.Namespace`` and returning an exit status.

Start-up stays instant: building the parser imports only the command modules, and those import nothing but the
standard library and ``core.errors`` at module level; numpy, pandas, SciPy, rich, Textual, the Label Studio SDK
and the web server are imported inside the ``func`` that needs them (``bench/bench_cli.py`` measures it,
``tests/test_cli_speed.py`` guards it).

Exit status: 0 success, 1 a domain error (``core.errors.EaslError``: one ``error: ...`` message on stderr, no
traceback), 2 usage error (argparse), 130 interrupted (Ctrl+C), 141 the reader of standard output went away
(``easl status --json | head``: quiet, as other tools killed by SIGPIPE).

Nothing reaches the user as a traceback: an SQLite error becomes one sentence naming the project file and what to
do (:func:`core.store.db.describe_sqlite_error`), a write error (disk full, file too large) names the file, and any
other exception is one line pointing at ``--debug``, which shows the traceback (``easl --debug COMMAND ...``, or
``--debug`` anywhere before ``--``, or ``EASL_DEBUG=1``).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sqlite3
import sys
import traceback

from easl_toolkit.core import __version__
from easl_toolkit.core.errors import EaslError

# Order here is the order in ``easl --help``.
COMMANDS = [
    "init",
    "next",
    "ingest",
    "status",
    "export",
    "verify",
    "evaluate",
    "simulate",
    "demo",
    "ls",
    "serve",
    "tui",
]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_PIPE = 0, 1, 2, 130, 141
DEBUG_HINT = "run the command again with --debug to see the traceback"
# Commands that write a report directory, and the option naming it: checked before the command does any work
# (core.outputs.check_output_dir), so that a directory under a file or in a read-only place is one sentence.
OUTPUT_DIRS = {"evaluate": "output", "simulate": "out"}
# Commands that need an extra beside the core install: (command, sub-command or None) -> the modules they import and
# the extra that brings them (pyproject.toml [project.optional-dependencies]).
EXTRAS = {
    ("ls", "setup"): (("label_studio_sdk",), "labelstudio"),
    ("ls", "status"): (("starlette",), "labelstudio"),
    ("serve", None): (("label_studio_sdk", "starlette", "uvicorn"), "labelstudio"),
}


def missing_extra(args: argparse.Namespace) -> str | None:
    """One sentence naming what to install when the command needs an extra that is not installed, else None."""
    from importlib.util import find_spec

    need = EXTRAS.get((args.command, getattr(args, "ls_command", None)))
    if need is None:
        return None
    modules, extra = need
    absent = [m for m in modules if find_spec(m) is None]
    if not absent:
        return None
    sub = f" {args.ls_command}" if getattr(args, "ls_command", None) else ""
    return (
        f"easl {args.command}{sub} needs the Label Studio extra, not installed here ({', '.join(absent)} missing): "
        f"pip install 'easl-toolkit[{extra}]' (from a checkout: pip install -e '.[{extra}]')."
    )


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``easl`` parser with every sub-command registered (argparse only; no heavy imports), or with
    ``command`` alone when it names one (what a run needs: only that command's module is read)."""
    parser = argparse.ArgumentParser(
        prog="easl",
        description="Collect scalar labels efficiently (EASL) and evaluate scoring systems against noisy human labels.",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the full traceback of an unexpected error (also accepted after the command)",
    )
    parser.add_argument("--version", action="version", version=f"easl-toolkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in [command] if command in COMMANDS else COMMANDS:
        importlib.import_module(f"easl_toolkit.tui.commands.{name}").register(sub)
    _alias_options(parser)
    return parser


#: Options named as in every other command (the new name first in --help), old name -> new name: ``simulate``'s
#: ``--out`` is ``--output``, as for ``evaluate``, ``export`` and ``demo``; the old name stays an alias.
OPTION_ALIASES = {"--out": "--output"}


def _alias_options(parser: argparse.ArgumentParser) -> None:
    """Give every option named in :data:`OPTION_ALIASES` its common name, in ``parser`` and its sub-parsers."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                _alias_options(sub)
            continue
        for old, new in OPTION_ALIASES.items():
            if old in action.option_strings and new not in parser._option_string_actions:
                action.option_strings = [new, *action.option_strings]
                parser._option_string_actions[new] = action
                action.metavar = action.metavar or "DIR"


def _split_debug(argv: list[str]) -> tuple[list[str], bool]:
    """Remove ``--debug`` from anywhere before ``--`` (so that it works after the command too)."""
    cut = argv.index("--") if "--" in argv else len(argv)
    head = [a for a in argv[:cut] if a != "--debug"]
    return head + argv[cut:], len(head) != cut or os.environ.get("EASL_DEBUG", "") not in ("", "0")


def _silence_stdout() -> None:
    """After EPIPE: point standard output at /dev/null so that the interpreter's final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _project_hint(path: str, problem: str) -> str:
    if "damaged" in problem:
        return (
            f"; `easl verify {path}` reports the damaged pages and `easl verify {path} --salvage NEW.easl` "
            f"copies every readable observation into a new project file"
        )
    return ""


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_ERROR


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command and return its exit status."""
    from easl_toolkit.core.errors import ProjectFileError

    # OpenBLAS (numpy's and SciPy's, when they load) starts a thread per core, and each spins for 2^28 cycles
    # waiting for work that the commands rarely give: on 2 cores, a sixth of ``easl export``'s CPU time (0.24 of
    # 1.54 s at 1,000,000 items), taken from the threads that do the work. 2^4 cycles, then they sleep (OpenBLAS
    # reads the variable when it loads: numpy is not imported yet here; a value set by the user is kept).
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

    argv, debug = _split_debug(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser(next((a for a in argv if not a.startswith("-")), None))
    args = parser.parse_args(argv)  # exits 2 on a usage error, 0 after --help
    project = getattr(args, "project", None)
    absent = missing_extra(args)
    if absent is not None:
        return _error(absent)
    try:
        directory = getattr(args, OUTPUT_DIRS.get(args.command, ""), None)
        if isinstance(directory, str):
            from easl_toolkit.core.outputs import check_output_dir

            check_output_dir(directory)
        status = int(args.func(args) or EXIT_OK)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_PIPE
    except ProjectFileError as exc:
        return _error(f"{exc}{_project_hint(exc.path, exc.problem)}")
    except EaslError as exc:
        return _error(str(exc))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except sqlite3.Error as exc:
        if debug:
            traceback.print_exc()
        from easl_toolkit.core.store.db import describe_sqlite_error

        problem = describe_sqlite_error(exc)
        where = project if isinstance(project, str) else "the project file"
        return _error(f"{where}: {problem}{_project_hint(where, problem)}")
    except OSError as exc:
        if debug:
            traceback.print_exc()
        if exc.errno == errno.EPIPE:
            _silence_stdout()
            return EXIT_PIPE
        where = f"{exc.filename}: " if exc.filename else ""
        return _error(
            f"{where}{exc.strerror or exc}"
            + ("" if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT) else f" ({DEBUG_HINT})")
        )
    except Exception as exc:  # a bug or an unforeseen input: one line, the traceback on request
        if debug:
            traceback.print_exc()
        text = str(exc).splitlines()[0] if str(exc) else ""
        return _error(f"unexpected {type(exc).__name__}{': ' + text if text else ''} ({DEBUG_HINT}).")


if __name__ == "__main__":
    sys.exit(main())
