"""The dialog that asks the annotator's name (once: the answer is remembered in the settings file)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from easl_toolkit.core.errors import EaslError
from easl_toolkit.tui.settings import clean_annotator


class NamePrompt(ModalScreen[str | None]):
    """Ask for the annotator's name; dismisses with the cleaned name, or None on Escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, current: str = "") -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="name-dialog", classes="dialog"):
            yield Label("Your name as an annotator (saved with every score):")
            yield Input(value=self.current, placeholder="e.g. alice", id="annotator-name")
            yield Label("", id="name-error", classes="error")

    @on(Input.Submitted, "#annotator-name")
    def _submitted(self, event: Input.Submitted) -> None:
        try:
            name = clean_annotator(event.value)
        except EaslError as exc:
            self.query_one("#name-error", Label).update(str(exc))
            return
        self.dismiss(name)

    def action_cancel(self) -> None:
        self.dismiss(None)
