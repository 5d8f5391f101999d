"""The Textual terminal app launched by ``easl tui [PROJECT]``.

Screens (Textual "modes", each with its own stack; switched by function keys shown in the footer):

* Annotate (F2): the next open HIT of the project, scored item by item by keyboard; submissions go through
  ``Project.ingest`` (one transaction per HIT) and can be undone (a retraction).
* Monitor (F3): live convergence figures, charts and the virtualised item table, polled in a worker thread.
* Evaluate (F4): the metrics of ``easl evaluate`` on a file chosen in the app.
* Export (F5): estimates and raw ratings to CSV, JSONL or Parquet.

``?`` (or F1) shows the keys of the current screen; ``o`` (or F6) opens a project or a data file; Ctrl+Q quits.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.binding import Binding

from core.errors import UserError

STYLES = Path(__file__).parent / "styles"

#: Screens that need an open project.
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

    CSS_PATH = [
        STYLES / "app.tcss",
        STYLES / "annotate.tcss",
        STYLES / "monitor.tcss",
        STYLES / "evaluate.tcss",
        STYLES / "export.tcss",
        STYLES / "dialogs.tcss",
    ]
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
        self.project_path: Path | None = Path(project) if project is not None else None
        self.annotator: str | None = annotator
        self.poll_interval = float(poll_interval)
        self.data_file: Path | None = Path(data_file) if data_file is not None else None
        if self.project_path is None and start in PROJECT_SCREENS:
            start = "evaluate"
        self.start_screen = start
        self._install_modes()

    # ------------------------------------------------------------------ modes
    def _install_modes(self) -> None:
        from tui.screens.evaluate import EvaluateScreen

        if "evaluate" not in self._modes:
            self.add_mode("evaluate", EvaluateScreen)
        if self.project_path is not None:
            from tui.screens.annotate import AnnotateScreen
            from tui.screens.export import ExportScreen
            from tui.screens.monitor import MonitorScreen

            self.add_mode("annotate", AnnotateScreen)
            self.add_mode("monitor", MonitorScreen)
            self.add_mode("export", ExportScreen)

    @property
    def project(self) -> Path:
        """The open project file (the project screens, Annotate, Monitor and Export, exist only while one is open)."""
        if self.project_path is None:
            raise RuntimeError("no project is open")
        return self.project_path

    def on_mount(self) -> None:
        self._update_title()
        self.switch_mode(self.start_screen)

    def _update_title(self) -> None:
        self.title = f"easl · {self.project_path.name}" if self.project_path is not None else "easl"

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
        from tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def action_open_file(self) -> None:
        """Pick a project (opens Annotate) or a data file (opens Evaluate)."""
        from tui.screens.file_picker import FilePickerScreen

        self.push_screen(FilePickerScreen(title="Open a project file or a data file to evaluate"), self.open_path)

    async def open_path(self, path: Path | None) -> None:
        """Open ``path``: a project file switches to Annotate, a data file to Evaluate."""
        if path is None:
            return
        if path.suffix.lower() in PROJECT_SUFFIXES:
            await self.open_project(path)
        else:
            self.data_file = path
            if self.current_mode != "evaluate":
                await self.switch_mode("evaluate")
            from tui.screens.evaluate import EvaluateScreen

            screen = self.screen
            if isinstance(screen, EvaluateScreen):
                screen.load_file(path)

    async def open_project(self, path: Path) -> None:
        """Make ``path`` the app's project (closing the screens of the previous one) and show Annotate."""
        from core.store import Project

        try:
            Project.open(path, readonly=True).close()
        except UserError as exc:
            self.notify(str(exc), severity="error", timeout=8)
            return
        if self.current_mode != "evaluate":
            await self.switch_mode("evaluate")
        for mode in PROJECT_SCREENS:
            if mode in self._modes:
                await self.remove_mode(mode)
        self.project_path = path
        self._install_modes()
        self._update_title()
        await self.switch_mode("annotate")
