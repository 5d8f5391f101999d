"""Export: the project's estimates and raw ratings to CSV, JSONL or Parquet (the tables of ``easl export``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, Checkbox, Footer, Header, Input, Label, RadioButton, RadioSet, Static

from easl_toolkit.core.errors import EaslError
from easl_toolkit.tui.screens.annotate_session import STORE_ERRORS

#: Format name -> file extension.
FORMATS = {"CSV": ".csv", "JSONL": ".jsonl", "Parquet": ".parquet"}


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote."""

    estimates_path: Path
    n_items: int
    ratings_path: Path | None
    n_ratings: int


def export_project(project_path: Path, estimates_path: Path, ratings_path: Path | None = None) -> ExportResult:
    """Write ``Project.estimates()`` (and ``Project.ratings()``) with ``core.tables.write_table`` (format by
    extension, atomic write).

    Raises
    ------
    EaslError
        Unknown extension, a missing directory, or an unreadable project.
    """
    from easl_toolkit.core.store import Project
    from easl_toolkit.core.tables import write_format, write_table

    write_format(estimates_path)
    if ratings_path is not None:
        write_format(ratings_path)
        if Path(ratings_path).resolve() == Path(estimates_path).resolve():
            raise EaslError(f"{ratings_path}: the ratings file must differ from the estimates file.")
    with Project.open(project_path, readonly=True) as project:
        estimates = project.estimates()
        ratings = project.ratings() if ratings_path is not None else None
    write_table(estimates, estimates_path)
    n_ratings = 0
    if ratings is not None and ratings_path is not None:
        write_table(ratings, ratings_path)
        n_ratings = len(ratings)
    return ExportResult(Path(estimates_path), len(estimates), Path(ratings_path) if ratings_path else None, n_ratings)


def with_suffix(path_text: str, suffix: str) -> str:
    """``path_text`` with its extension replaced by ``suffix`` (kept as typed otherwise)."""
    if not path_text.strip():
        return path_text
    return str(Path(path_text.strip()).with_suffix(suffix))


class ExportScreen(Screen):
    """Choose the format and the output files, then export the project file ``project``."""

    CSS_PATH = "../styles/export.tcss"
    HELP = """\
**Export** — write the estimates (item_id, estimate, mean, variance, ci_low, ci_high, n_annotations and the item's
data, on the project's score range) and, optionally, the raw ratings in long form (item_id, annotator, score,
hit_id, iteration, annotation_id, created_at).

| key | action |
|---|---|
| Tab | next field |
| Space | choose a format / tick the box |
| Ctrl+S or the Export button | write the files |
"""

    BINDINGS = [Binding("ctrl+s", "export", "Export files")]

    def __init__(self, project: Path) -> None:
        super().__init__()
        self.project = Path(project)

    def compose(self) -> ComposeResult:
        stem = self.project.with_suffix("").name
        yield Header()
        with Vertical(id="export-form"):
            yield Label("Format")
            with RadioSet(id="export-format"):
                for k, name in enumerate(FORMATS):
                    yield RadioButton(name, value=(k == 0), id=f"format-{name.lower()}")
            yield Label("Estimates file")
            yield Input(value=f"{stem}-estimates.csv", id="estimates-path")
            with Horizontal(id="ratings-row"):
                yield Checkbox("Also the raw ratings", value=True, id="with-ratings")
            yield Input(value=f"{stem}-ratings.csv", id="ratings-path")
            yield Button("Export", id="export-button", variant="primary", action="screen.export")
            yield Static("", id="export-result")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.sub_title = "Export"

    @on(RadioSet.Changed, "#export-format")
    def _format_changed(self, event: RadioSet.Changed) -> None:
        suffix = FORMATS[str(event.pressed.label)]
        for field_id in ("#estimates-path", "#ratings-path"):
            field = self.query_one(field_id, Input)
            field.value = with_suffix(field.value, suffix)

    @on(Checkbox.Changed, "#with-ratings")
    def _ratings_toggled(self, event: Checkbox.Changed) -> None:
        self.query_one("#ratings-path", Input).disabled = not event.value

    def action_export(self) -> None:
        """Write the files (in a worker thread)."""
        estimates = self.query_one("#estimates-path", Input).value.strip()
        if not estimates:
            self._report(Text("Type the estimates file name first.", style="bold red"))
            return
        ratings = None
        if self.query_one("#with-ratings", Checkbox).value:
            ratings = self.query_one("#ratings-path", Input).value.strip() or None
            if ratings is None:
                self._report(Text("Type the ratings file name, or untick the box.", style="bold red"))
                return
        self._report(Text("exporting…", style="dim"))
        self._export_worker(Path(estimates), Path(ratings) if ratings else None)

    @work(exclusive=True, group="export")
    async def _export_worker(self, estimates: Path, ratings: Path | None) -> None:
        try:
            result = await asyncio.to_thread(export_project, self.project, estimates, ratings)
        except STORE_ERRORS as exc:
            self._report(Text(str(exc), style="bold red"))
            return
        lines = f"Wrote {result.n_items:,} items to {result.estimates_path}"
        if result.ratings_path is not None:
            lines += f"\nWrote {result.n_ratings:,} ratings to {result.ratings_path}"
        self._report(Text(lines, style="green"))
        self.notify("Export written.", timeout=3)

    def _report(self, text: Text) -> None:
        self.query_one("#export-result", Static).update(text)
