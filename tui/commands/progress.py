"""Progress bars of the long-running commands (``easl evaluate``, ``easl simulate``), drawn by rich on stderr so that
standard output stays clean (``--json``, pipes). rich is imported by the call, never at start-up."""

from __future__ import annotations

from typing import Any


def stderr_progress(*columns: Any, transient: bool) -> Any:
    """A ``rich.progress.Progress`` with ``columns`` (rich column objects), on a console writing to stderr."""
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True)
    # on a terminal only: a log or a pipe gets the command's own lines, not the frames of a bar
    return Progress(*columns, console=console, transient=transient, disable=not console.is_terminal)


def bootstrap_progress(total: int, quiet: bool):
    """``(update(done, total), stop)`` for the bootstrap of ``easl evaluate``, started; ``(None, no-op)`` when
    there is nothing to show (``total <= 0`` or ``quiet``)."""
    if total <= 0 or quiet:
        return None, lambda: None
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn

    prog = stderr_progress(
        TextColumn("bootstrap"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True
    )
    task = prog.add_task("bootstrap", total=total)
    prog.start()

    def update(done, _total):
        prog.update(task, completed=done)

    return update, prog.stop


def stage_progress():
    """``(update(stage, done, total), stop)``: one bar per named stage (the Dask evaluation's scale pass and
    partitions), started."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    prog = stderr_progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True
    )
    tasks: dict = {}
    prog.start()

    def update(stage, done, total):
        if stage not in tasks:
            tasks[stage] = prog.add_task(stage, total=total)
        prog.update(tasks[stage], completed=done)

    return update, prog.stop


def step_progress(description: str, total: int):
    """``(progress, advance(step))`` for ``easl simulate``: one bar of ``total`` steps, labelled by the step
    running; ``progress`` is entered by the caller (a context manager)."""
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn

    prog = stderr_progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("{task.fields[step]}"),
        TimeElapsedColumn(),
        transient=False,
    )
    task = prog.add_task(description, total=total, step="")

    def advance(step: str = "") -> None:
        prog.update(task, advance=1, step=step)

    return prog, advance
