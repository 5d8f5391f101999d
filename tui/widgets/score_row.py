"""One item of a HIT with its score, edited by keyboard: arrows adjust, digits type, Home / End jump to the ends."""

from __future__ import annotations

import math
import textwrap

from textual import events
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget


def typed_score(buffer: str, digit: str, low: float, high: float) -> tuple[str, float]:
    """The score after typing ``digit`` with ``buffer`` typed so far: digits append while the number fits the range,
    otherwise the digit starts a new number; the result is clipped to [low, high].

    Returns
    -------
    (str, float)
        The new buffer and the score it gives.
    """
    candidate = buffer + digit
    if float(candidate) > high:
        candidate = digit
    return candidate, float(min(max(float(candidate), low), high))


class ScoreRow(Widget):
    """An item's text and a score bar on the project's score range; starts without a score.

    The row is edited through its methods by the screen that holds it (the screen receives every key, so a burst
    of keys, e.g. typed over a slow SSH link, is applied in order to the right row). The current row carries the
    CSS class ``-current``.
    """

    DEFAULT_CSS = """
    ScoreRow { height: auto; padding: 0 1; }
    """

    score: reactive[float | None] = reactive(None, layout=False)

    class Changed(Message):
        """The score of a row changed."""

        def __init__(self, row: ScoreRow) -> None:
            super().__init__()
            self.row = row

    class Clicked(Message):
        """The row was clicked (the screen makes it current)."""

        def __init__(self, row: ScoreRow) -> None:
            super().__init__()
            self.row = row

    def __init__(
        self,
        position: int,
        item_id: str,
        text: str,
        *,
        low: float,
        high: float,
        score: float | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.position = position
        self.item_id = item_id
        self.text = text
        self.low = float(low)
        self.high = float(high)
        self._buffer = ""
        self.set_reactive(ScoreRow.score, score)

    # --------------------------------------------------------------- editing
    @property
    def is_current(self) -> bool:
        """Whether this is the row the keys edit."""
        return self.has_class("-current")

    def set_current(self, current: bool) -> None:
        """Make the row current or not (typing starts a new number either way)."""
        self._buffer = ""
        self.set_class(current, "-current")
        self.refresh(layout=True)

    def _set(self, value: float | None) -> None:
        if value is not None:
            value = float(min(max(value, self.low), self.high))
        self.score = value
        self.post_message(self.Changed(self))

    def adjust(self, steps: int) -> None:
        """Move by one unit (|steps| == 1) or by a tenth of the range (|steps| == 10); without a score yet, the
        first move sets the middle of the range."""
        self._buffer = ""
        span = self.high - self.low
        step = 1.0 if abs(steps) == 1 else max(round(span / 10.0), 1.0)
        if self.score is None:
            self._set(self.low + round(span / 2.0))
        else:
            self._set(self.score + math.copysign(step, steps))

    def extreme(self, side: int) -> None:
        """The highest (side > 0) or lowest score."""
        self._buffer = ""
        self._set(self.high if side > 0 else self.low)

    def erase(self) -> None:
        """Erase the last typed digit (no digit left: no score)."""
        self._buffer = self._buffer[:-1]
        self._set(float(self._buffer) if self._buffer else None)

    def type_digit(self, digit: str) -> None:
        """Type one digit (see :func:`typed_score`)."""
        self._buffer, value = typed_score(self._buffer, digit, self.low, self.high)
        self._set(value)

    def on_click(self, event: events.Click) -> None:
        self.post_message(self.Clicked(self))

    # ------------------------------------------------------------- rendering
    def render(self) -> Content:
        width = max(self.size.width, 20)
        prefix = f"{self.position}. "
        lines = textwrap.wrap(self.text, width - len(prefix)) or [""]
        if not self.is_current and len(lines) > 2:
            lines = lines[:2]
            lines[1] = lines[1][: max(width - len(prefix) - 1, 0)] + "…"
        parts: list = []
        for k, line in enumerate(lines):
            parts.append((prefix if k == 0 else " " * len(prefix), "bold"))
            parts.append(line + "\n")
        value = "  --" if self.score is None else f"{self.score:4.0f}"
        bar_w = max(width - len(prefix) - 6, 5)
        filled = 0 if self.score is None else int(round((self.score - self.low) / (self.high - self.low) * bar_w))
        parts.append(" " * len(prefix))
        parts.append(("█" * filled, "$accent" if self.is_current else "$foreground-muted"))
        parts.append(("░" * (bar_w - filled), "$foreground-muted"))
        parts.append((f" {value}", "bold" if self.score is not None else "dim"))
        return Content.assemble(*parts)
