"""The Textual terminal app launched by ``easl tui [PROJECT]``.

Screens (Textual "modes", each with its own stack; switched by function keys shown in the footer):

* Annotate (F2): the next open HIT of the project, scored item by item by keyboard; submissions go through
  ``Project.ingest`` (one transaction per HIT) and can be undone (a retraction).
* Monitor (F3): live convergence figures, charts and the virtualised item table, polled in a worker thread.
* Evaluate (F4): the metrics of ``easl evaluate`` on a file chosen in the app.
* Export (F5): estimates and raw ratings to CSV, JSONL or Parquet.

``?`` (or F1) shows the keys of the current screen; F6 opens a project or a data file; Ctrl+Q quits.
Each screen gets what it works on (the project file, the annotator, a data file) when it is built, and loads its
own stylesheet (``CSS_PATH``); the app keeps the shared styles and those of the dialogs.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from textual import on
from textual.app import App
from textual.binding import Binding
from textual.reactive import var

from easl_toolkit.core.errors import EaslError
from easl_toolkit.tui.screens.annotate import AnnotateScreen
from easl_toolkit.tui.screens.evaluate import EvaluateScreen
from easl_toolkit.tui.screens.export import ExportScreen
from easl_toolkit.tui.screens.file_picker import FilePickerScreen
from easl_toolkit.tui.screens.help import HelpScreen
from easl_toolkit.tui.screens.monitor import MonitorScreen

STYLES = Path(__file__).parent / "styles"

#: Screens that need an open project (installed as modes exactly while one is open).
PROJECT_SCREENS = ("annotate", "monitor", "export")

#: Extensions of project files (anything else readable by ``core.tables`` is a data file for Evaluate).
PROJECT_SUFFIXES = (".easl", ".sqlite", ".db")


class EaslApp(App):
    """easl's terminal app.

    Parameters
    ----------
    project : str or Path, optional
        The project file; without it only Evaluate (and the file picker) are available until one is opened.
    start : {"annotate", "monitor", "evaluate", "export"}
        The first screen.
    annotator : str, optional
        The annotator's name for this session (otherwise the remembered one, else asked once).
    poll_interval : float
        Seconds between the monitor's polls of the project file.
    data_file : str or Path, optional
        A data file to open in Evaluate.
    """

    CSS_PATH = [STYLES / "app.tcss", STYLES / "dialogs.tcss"]
    TITLE = "easl"
    ENABLE_COMMAND_PALETTE = False

    BINDINGS = [
        Binding("f1", "help", "Help", show=False, priority=True),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("f2", "show('annotate')", "Annotate", key_display="F2"),
        Binding("f3", "show('monitor')", "Monitor", key_display="F3"),
        Binding("f4", "show('evaluate')", "Evaluate", key_display="F4"),
        Binding("f5", "show('export')", "Export", key_display="F5"),
        Binding("f6", "open_file", "Open", show=False),
        Binding("ctrl+q", "quit", "Quit", key_display="^Q"),
    ]

    #: The open project file, named in the title; None until one is opened.
    project_path: var[Path | None] = var(None)

    def __init__(
        self,
        project: str | Path | None = None,
        *,
        start: str = "annotate",
        annotator: str | None = None,
        poll_interval: float = 1.0,
        data_file: str | Path | None = None,
    ) -> None:
        super().__init__()
        self.annotator: str | None = annotator
        self.poll_interval = float(poll_interval)
        self.data_file: Path | None = Path(data_file) if data_file is not None else None
        self.set_reactive(EaslApp.project_path, Path(project) if project is not None else None)
        self.start_screen = "evaluate" if self.project_path is None and start in PROJECT_SCREENS else start
        self.add_mode("evaluate", lambda: EvaluateScreen(self.data_file))
        self._add_project_modes()

    def _add_project_modes(self) -> None:
        """Annotate, Monitor and Export of the open project."""
        path = self.project_path
        if path is not None:
            self.add_mode("annotate", lambda: AnnotateScreen(path, self.annotator))
            self.add_mode("monitor", partial(MonitorScreen, path, self.poll_interval))
            self.add_mode("export", partial(ExportScreen, path))

    def watch_project_path(self, path: Path | None) -> None:
        self.title = f"easl · {path.name}" if path is not None else "easl"

    def on_mount(self) -> None:
        self.watch_project_path(self.project_path)  # the title names the project from the start on
        self.switch_mode(self.start_screen)

    @on(AnnotateScreen.Named)
    def _annotator_named(self, message: AnnotateScreen.Named) -> None:
        """Keep the annotator's name for the Annotate screen of the next project opened."""
        self.annotator = message.name

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide the key of the screen on display, and the project screens while no project is open."""
        if action == "show" and parameters:
            target = parameters[0]
            if target == self.current_mode or (target in PROJECT_SCREENS and self.project_path is None):
                return False
        return True

    def action_show(self, screen: str) -> None:
        """Switch to one of the main screens."""
        if screen in PROJECT_SCREENS and self.project_path is None:
            self.notify("Open a project file first (F6).", severity="warning")
            return
        if self.current_mode != screen:
            self.switch_mode(screen)

    def action_help(self) -> None:
        """Show the keys of the current screen."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def action_open_file(self) -> None:
        """Pick a project (opens Annotate) or a data file (opens Evaluate)."""
        self.push_screen(FilePickerScreen(title="Open a project file or a data file to evaluate"), self.open_path)

    async def open_path(self, path: Path | None) -> None:
        """Open ``path``: a project file switches to Annotate, a data file to Evaluate."""
        if path is None:
            return
        if path.suffix.lower() in PROJECT_SUFFIXES:
            await self.open_project(path)
            return
        self.data_file = path
        if self.current_mode != "evaluate":
            await self.switch_mode("evaluate")
        if isinstance(self.screen, EvaluateScreen):
            self.screen.load_file(path)

    async def open_project(self, path: Path) -> None:
        """Make ``path`` the app's project (closing the screens of the previous one) and show Annotate."""
        from easl_toolkit.core.store import Project

        try:
            Project.open(path, readonly=True).close()
        except EaslError as exc:
            self.notify(str(exc), severity="error", timeout=8)
            return
        if self.current_mode != "evaluate":
            await self.switch_mode("evaluate")
        if self.project_path is not None:
            for mode in PROJECT_SCREENS:
                await self.remove_mode(mode)
        self.project_path = path
        self._add_project_modes()
        await self.switch_mode("annotate")
