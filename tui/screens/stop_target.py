"""The dialog that changes an aware project's stop target from the monitor (key ``t``).

The target is the Spearman correlation with the truth at which ``easl next`` and the Label Studio plugin stop
issuing HITs (``docs/studies/aware.md``, "Stopping rule"; docs/design.md, "aware"). It is written with
:meth:`core.store.settings.Settings.set_stop_at`, the method behind ``easl ls setup --stop-at``.
"""

from __future__ import annotations

import math

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

#: What the dialog returns: ``(target,)`` with ``target`` None to remove it, or None when cancelled.
StopChoice = tuple[float | None] | None


def parse_stop_target(text: str) -> float | None:
    """The stop target typed in the dialog: a number in (0, 1), or an empty field for none.

    Raises
    ------
    ValueError
        With the sentence the dialog shows, when ``text`` is not such a number.

    Examples
    --------
    >>> parse_stop_target(" 0.9 "), parse_stop_target("")
    (0.9, None)
    """
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number: type a Spearman correlation such as 0.9") from None
    if not (math.isfinite(value) and 0.0 < value < 1.0):
        raise ValueError(f"{text} is outside (0, 1): type a Spearman correlation such as 0.9")
    return value


class StopTargetPrompt(ModalScreen[StopChoice]):
    """Ask for the stop target; dismisses with ``(target,)`` (None: no target), or None on Escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, current: float | None) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="stop-dialog", classes="dialog"):
            yield Label("Stop target: the expected Spearman with the truth at which no more HITs are issued.")
            yield Label("A number in (0, 1); leave empty for no target.")
            value = "" if self.current is None else f"{self.current:g}"
            yield Input(value=value, placeholder="e.g. 0.9", id="stop-target")
            yield Label("", id="stop-error", classes="error")

    @on(Input.Submitted, "#stop-target")
    def _submitted(self, event: Input.Submitted) -> None:
        try:
            target = parse_stop_target(event.value)
        except ValueError as exc:
            self.query_one("#stop-error", Label).update(str(exc))
            return
        self.dismiss((target,))

    def action_cancel(self) -> None:
        self.dismiss(None)
