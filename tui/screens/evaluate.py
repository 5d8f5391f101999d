"""Evaluate: pick a file, choose the human, system and group columns, see the metrics of ``easl evaluate`` with
their intervals and the PRMSE warnings, and save the report.

The numbers come from ``core.metrics.evaluate`` (the pipeline behind ``easl evaluate``); this screen only reads
the file, lets the user choose the columns and shows the result object. What it computes and the rows it shows
(fields, evaluation, report, results table) are in ``tui/screens/evaluate_data.py``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import (
    Button,
    DataTable,
    Footer,
    Header,
    Input,
    Label,
    Select,
    SelectionList,
    Static,
    TabbedContent,
    TabPane,
)
from textual.widgets.select import NoSelection

from easl_toolkit.core.errors import EaslError
from easl_toolkit.tui.screens.evaluate_data import parse_count, parse_scale, result_rows, run_evaluation, save_report


def _shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies inside it, else absolute."""
    absolute = path.resolve()
    try:
        return str(absolute.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(absolute)


class EvaluateScreen(Screen):
    """Choose columns, evaluate, read the metrics and warnings, save the report (``data_file``: the file to open
    first)."""

    CSS_PATH = "../styles/evaluate.tcss"
    HELP = """\
**Evaluate** — the metrics of `easl evaluate` on a CSV, TSV, JSONL or Parquet file.

1. F6 opens a file (or start with `easl tui FILE`).
2. On the *Columns* tab tick the human columns (the first is the reference) and the system columns with Space,
   optionally choose a group column, the score scale (`MIN MAX`) and the number of bootstrap resamples.
3. Ctrl+E evaluates; the *Results* tab shows every metric with its interval, and the notes (PRMSE sample-size
   warnings among them).
4. Ctrl+S saves the report (tables, JSON and Markdown with plots) to the folder typed on the Results tab.
"""

    BINDINGS = [
        Binding("ctrl+e", "evaluate", "Evaluate"),
        Binding("ctrl+s", "save", "Save"),
        Binding("f6", "app.open_file", "Open", key_display="F6"),  # in the footer here: the screen names it
    ]

    #: The last evaluation (``core.metrics`` ``Evaluation``), shown on the Results tab.
    evaluation: var[Any] = var(None, always_update=True)

    def __init__(self, data_file: Path | None = None) -> None:
        super().__init__()
        self.data_file = data_file
        self.path: Path | None = None
        self.columns: list[str] = []
        self.saved: list[Path] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("No file: press F6 to open one.", id="eval-file")
        with TabbedContent(id="eval-tabs"):
            with TabPane("Columns", id="columns-tab"), Horizontal(id="columns-pane"):
                yield SelectionList[str](id="human-columns", classes="column-list")
                yield SelectionList[str](id="system-columns", classes="column-list")
                with Vertical(id="options"):
                    yield Label("group column")
                    yield Select[str]([], prompt="(none)", id="group-column")
                    yield Label("scale MIN MAX")
                    yield Input(placeholder="from the data", id="scale")
                    yield Label("bootstrap resamples")
                    yield Input(value="200", id="bootstrap")
                    yield Button("Evaluate", id="evaluate-button", variant="primary", action="screen.evaluate")
            with TabPane("Results", id="results-tab"):
                yield DataTable(id="results-table", zebra_stripes=True)
                with VerticalScroll(id="notes-scroll"):
                    yield Static("", id="eval-notes")
                with Horizontal(id="save-row"):
                    yield Input(placeholder="report folder", id="report-dir")
                    yield Button("Save report", id="save-button", action="screen.save")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.sub_title = "Evaluate"
        self.query_one("#human-columns", SelectionList).border_title = "human columns"
        self.query_one("#system-columns", SelectionList).border_title = "system columns"
        if self.data_file is not None:
            self.load_file(self.data_file)

    # ---------------------------------------------------------------- file
    @work(exclusive=True, group="evaluate-load")
    async def load_file(self, path: Path) -> None:
        """Read ``path`` (in a thread) and offer its columns."""
        from easl_toolkit.core.tables import read_table

        path = Path(path)
        try:
            frame = (await asyncio.to_thread(read_table, path)).frame
        except EaslError as exc:
            self._show_error(str(exc))
            return
        columns = [str(c) for c in frame.columns]
        n_rows = len(frame)
        self.path = path
        self.columns = columns
        self.query_one("#eval-file", Static).update(
            Text(f"{path.name}: {n_rows:,} rows, {len(columns)} columns · F6 opens another file")
        )
        human = self.query_one("#human-columns", SelectionList)
        system = self.query_one("#system-columns", SelectionList)
        human.clear_options()
        system.clear_options()
        guess_h = [c for c in columns if c.lower().startswith(("h", "human", "rater"))]
        guess_s = [c for c in columns if c.lower().startswith(("sys", "system", "model", "machine", "pred"))]
        human.add_options([(c, c, c in guess_h) for c in columns])
        system.add_options([(c, c, c in guess_s and c not in guess_h) for c in columns])
        group = self.query_one("#group-column", Select)
        group.set_options([(c, c) for c in columns])
        self.query_one("#report-dir", Input).value = _shown_path(path.with_name(path.stem + "-report"))
        self.query_one("#eval-tabs", TabbedContent).active = "columns-tab"
        human.focus()

    def _show_error(self, message: str) -> None:
        self.notify(message, severity="error", timeout=10)

    # ------------------------------------------------------------ evaluate
    def action_evaluate(self) -> None:
        """Evaluate the chosen columns (in a worker thread)."""
        if self.path is None:
            self._show_error("Open a data file first (F6).")
            return
        human = list(self.query_one("#human-columns", SelectionList).selected)
        system = list(self.query_one("#system-columns", SelectionList).selected)
        group_value = self.query_one("#group-column", Select).value
        group = None if isinstance(group_value, NoSelection) or group_value is None else str(group_value)
        try:
            scale = parse_scale(self.query_one("#scale", Input).value)
            n_boot = parse_count(self.query_one("#bootstrap", Input).value, "bootstrap resamples")
        except EaslError as exc:
            self._show_error(str(exc))
            return
        # keep the file's column order for the human columns (the first is the reference rater)
        human = [c for c in self.columns if c in human]
        system = [c for c in self.columns if c in system]
        self.query_one("#eval-notes", Static).update(Text("evaluating…", style="dim"))
        self.query_one("#eval-tabs", TabbedContent).active = "results-tab"
        self._evaluate_worker(self.path, human, system, group, scale, n_boot)

    @work(exclusive=True, group="evaluate")
    async def _evaluate_worker(self, path, human, system, group, scale, n_boot) -> None:
        notes = self.query_one("#eval-notes", Static)

        def progress(done: int, total: int) -> None:  # in the thread: shown before the next resamples run
            text = Text(f"evaluating… bootstrap {done:,} of {total:,} resamples", style="dim")
            self.app.call_from_thread(notes.update, text)

        try:
            self.evaluation = await asyncio.to_thread(
                run_evaluation, path, human, system, group, scale, n_boot, progress=progress
            )
        except EaslError as exc:
            self._show_error(str(exc))
            notes.update(Text(str(exc), style="red"))

    def watch_evaluation(self, evaluation) -> None:
        """Fill the results table and the notes from an evaluation."""
        if evaluation is None:
            return
        columns, rows = result_rows(evaluation)
        table = self.query_one("#results-table", DataTable)
        table.clear(columns=True)
        table.add_columns(*columns)
        table.add_rows(rows)
        notes = [
            f"{evaluation.n_responses:,} responses evaluated, {evaluation.n_dropped:,} dropped; intervals: "
            f"{evaluation.n_resamples} bootstrap resamples ({evaluation.confidence:.0%})"
        ]
        notes += [f"• {n}" for n in evaluation.notes]
        text = Text("\n".join(notes))
        for k, line in enumerate(notes):
            if "PRMSE" in line or "prmse" in line:
                text.stylize("bold yellow", sum(len(x) + 1 for x in notes[:k]), sum(len(x) + 1 for x in notes[: k + 1]))
        self.query_one("#eval-notes", Static).update(text)
        self.query_one("#eval-tabs", TabbedContent).active = "results-tab"
        table.focus()

    # ---------------------------------------------------------------- save
    def action_save(self) -> None:
        """Write the report of the last evaluation to the folder typed on the Results tab."""
        if self.evaluation is None or self.path is None:  # (an evaluation always has its file)
            self._show_error("Evaluate first (Ctrl+E), then save the report.")
            return
        folder = self.query_one("#report-dir", Input).value.strip()
        if not folder:
            self._show_error("Type the report folder first.")
            return
        self._save_worker(Path(folder), self.path)

    @work(exclusive=True, group="evaluate-save")
    async def _save_worker(self, folder: Path, source: Path) -> None:
        try:
            self.saved = await asyncio.to_thread(save_report, self.evaluation, folder, source)
        except (EaslError, OSError) as exc:
            self._show_error(str(exc))
            return
        self.notify(f"Report saved to {folder} ({len(self.saved)} files).", timeout=5)
