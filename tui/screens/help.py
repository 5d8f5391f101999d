"""The help dialog (``?`` or F1): the keys of the screen underneath and the app's global keys."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Markdown

GLOBAL_HELP = """\
**Everywhere**

| key | action |
|---|---|
| F2 / F3 / F4 / F5 | Annotate / Monitor / Evaluate / Export |
| F6 | open a project or a data file |
| ? or F1 | this help (Escape closes it) |
| Ctrl+Q | quit (submitted HITs are already saved) |
"""


class HelpScreen(ModalScreen[None]):
    """Shows ``screen.help_text`` (Markdown, when the screen made one for its data) or ``screen.HELP``, followed by
    the global keys."""

    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("question_mark", "close", "Close", show=False),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(self, screen: Screen) -> None:
        super().__init__()
        own = getattr(screen, "help_text", None) or getattr(screen, "HELP", "") or ""  # help_text: of the data
        self.text = own.rstrip() + "\n\n" + GLOBAL_HELP

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog", classes="dialog"):
            yield Markdown(self.text)

    def action_close(self) -> None:
        self.dismiss(None)
