"""A file picker: a directory tree filtered to the files the app can open, and a path field."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DirectoryTree, Input, Label

from easl_toolkit.core.tables import READ_FORMATS

#: Extensions shown: data files readable by ``core.tables`` and project files.
OPENABLE = tuple(sorted(set(READ_FORMATS) | {".easl"}))


class OpenableTree(DirectoryTree):
    """A directory tree showing folders and openable files only (hidden entries left out)."""

    def __init__(self, path: str | Path, suffixes: Iterable[str], *, id: str | None = None) -> None:
        self.suffixes = tuple(s.lower() for s in suffixes)
        super().__init__(path, id=id)

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        return [p for p in paths if not p.name.startswith(".") and (p.is_dir() or p.suffix.lower() in self.suffixes)]


class FilePickerScreen(ModalScreen[Path | None]):
    """Pick a file: Enter on a file in the tree, or type a path and press Enter. Dismisses with the Path or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self, title: str = "Open a file", *, root: str | Path = ".", suffixes: Iterable[str] = OPENABLE
    ) -> None:
        super().__init__()
        self.title_text = title
        self.root = Path(root)
        self.suffixes = tuple(suffixes)

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-dialog", classes="dialog"):
            yield Label(self.title_text, id="picker-title")
            yield Input(placeholder="path of the file (Enter to open)", id="picker-path")
            yield OpenableTree(self.root, self.suffixes, id="picker-tree")
            yield Label("", id="picker-error", classes="error")

    def on_mount(self) -> None:
        self.query_one("#picker-path", Input).focus()

    @on(DirectoryTree.FileSelected)
    def _file_selected(self, event: DirectoryTree.FileSelected) -> None:
        event.stop()
        self._choose(Path(event.path))

    @on(Input.Submitted, "#picker-path")
    def _path_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self._choose(Path(event.value.strip()).expanduser())

    def _choose(self, path: Path) -> None:
        if not path.is_file():
            self.query_one("#picker-error", Label).update(f"{path}: no such file.")
            return
        if path.suffix.lower() not in self.suffixes:
            known = ", ".join(self.suffixes)
            self.query_one("#picker-error", Label).update(f"{path}: cannot open this kind of file; use {known}.")
            return
        self.dismiss(path)

    def action_cancel(self) -> None:
        self.dismiss(None)
