"""Annotate: score the next open HIT of a project by keyboard, submit it, undo the last submission.

The screen shows and edits; the work on the project file (submit, undo, which HIT comes next) is
``tui.screens.annotate_session.AnnotationSession``, run in a thread by the screen's workers so that the keyboard
never waits.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, Static

from easl_toolkit.core.errors import EaslError
from easl_toolkit.tui.screens.annotate_session import STORE_ERRORS, AnnotationSession, HitView
from easl_toolkit.tui.screens.name_prompt import NamePrompt
from easl_toolkit.tui.settings import clear_draft, load_draft, remember_annotator, remembered_annotator, save_draft
from easl_toolkit.tui.widgets.score_row import ScoreRow


class ItemsScroll(VerticalScroll, can_focus=False):
    """The HIT's rows (not focusable: the screen receives every key)."""


def annotate_help(low: float, high: float) -> str:
    """The keys of the Annotate screen for a project scored on [``low``, ``high``]: what one press of each key
    moves (:meth:`tui.widgets.score_row.ScoreRow.adjust`) and an example of typing a score in that range.

    Examples
    --------
    >>> "score −1 / +1 (a tenth of the range" in annotate_help(1, 5), "`4` gives 4" in annotate_help(1, 5)
    (True, True)
    >>> "score −10 / +10" in annotate_help(0, 100), "`7` `5` gives 75" in annotate_help(0, 100)
    (True, True)
    """
    span = high - low
    step = max(round(span / 10.0), 1.0)
    example = int(low + 0.75 * span)
    typed = " ".join(f"`{d}`" for d in str(example)) if example >= 0 else f"`{int(high)}`"
    shown = example if example >= 0 else int(high)
    least = ", at least 1" if span / 10.0 < 1 else ""
    return f"""\
**Annotate** — score every item of the HIT ({low:g} to {high:g}), then submit.

| key | action |
|---|---|
| ← / → | score −1 / +1 |
| ↓ / ↑ | score −{step:g} / +{step:g} (a tenth of the range{least}) |
| Home / End | lowest / highest score ({low:g} / {high:g}) |
| digits | type a score (e.g. {typed} gives {shown}) |
| Backspace | erase the last digit |
| Tab / Shift+Tab | next / previous item |
| Enter | submit the HIT (every item needs a score) |
| u or Ctrl+Z | undo the last submission (retracts it) |
| n | change the annotator's name |

Scores typed for a HIT not yet submitted are kept as a draft and come back when the project is opened again.
"""


class AnnotateScreen(Screen):
    """Score the items of the next open HIT (0-100 by default) and submit."""

    CSS_PATH = "../styles/annotate.tcss"
    HELP = annotate_help(0.0, 100.0)
    #: The help of the project's range, once its first HIT is read (:meth:`_show`; the help dialog shows it).
    help_text: str | None = None

    # Shown in the footer (and usable by clicking it); the keys themselves are handled in ``on_key`` so that a
    # burst of keys is applied in order.
    BINDINGS = [
        Binding("enter", "submit", "Submit"),
        Binding("u", "undo", "Undo"),
    ]

    #: Editing keys -> (ScoreRow method, argument).
    EDIT_KEYS = {
        "left": ("adjust", -1),
        "right": ("adjust", 1),
        "down": ("adjust", -10),
        "up": ("adjust", 10),
        "home": ("extreme", -1),
        "end": ("extreme", 1),
    }

    class Named(Message):
        """The annotator gave their name (the app keeps it for the next project's Annotate)."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    #: The HIT on screen and its progress figures (None until the first one is read).
    view: var[HitView | None] = var(None)
    #: The annotator's name (None until given).
    annotator: var[str | None] = var(None)
    #: HITs submitted in this session (less the ones undone).
    session_count = var(0)
    #: The progress line, from the three above.
    progress = var("")

    def __init__(self, project: Path, annotator: str | None = None) -> None:
        super().__init__()
        self.project = Path(project)
        self.set_reactive(AnnotateScreen.annotator, annotator)
        self.session = AnnotationSession(self.project, annotator or "")  # named in :meth:`_start`
        self.busy = False
        self.current = 0
        self._draft: dict[str, float] = {}
        self._draft_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="progress")
        yield Static("", id="question")
        yield Static("", id="hit-title")
        yield ItemsScroll(id="items")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.sub_title = "Annotate"
        name = self.annotator
        if name is None:
            with self._store_errors():
                name = remembered_annotator()
        if name is None:
            self.app.push_screen(NamePrompt(), self._named)
        else:
            self._start(name)

    def _named(self, name: str | None) -> None:
        if not name:
            if not self.session.annotator:
                self.query_one("#hit-title", Static).update("An annotator name is needed: press n to enter it.")
            return
        try:
            name = remember_annotator(name)
        except (EaslError, OSError) as exc:
            self.notify(f"The name is used for this session but could not be saved: {exc}", severity="warning")
        self._start(name)

    def _start(self, name: str) -> None:
        self.annotator = self.session.annotator = name
        self.post_message(self.Named(name))
        self.load_hit()

    # ------------------------------------------------------------- workers
    @contextlib.contextmanager
    def _store_errors(self) -> Iterator[None]:
        """Show what the project file refused or could not give (:data:`STORE_ERRORS`) and free the keys."""
        try:
            yield
        except STORE_ERRORS as exc:
            self.busy = False
            self.notify(str(exc), severity="error", timeout=8)

    @work(exclusive=True, group="annotate")
    async def load_hit(self, prefer_hit: str | None = None, prefill: dict | None = None) -> None:
        """Fetch the HIT to show (the project is read in a thread: the keyboard never waits)."""
        with self._store_errors():
            await self._show(await asyncio.to_thread(self.session.current, prefer_hit), prefill or {})

    @work(exclusive=True, group="annotate")
    async def _submit(self, hit: dict, scores: dict[str, float]) -> None:
        with self._store_errors():
            await asyncio.to_thread(self.session.submit, hit, scores)
            self._forget_draft()
            with contextlib.suppress(EaslError, OSError):  # a stale draft is ignored once its HIT is complete
                clear_draft(self.session.path, self.session.annotator)
            self.session_count += 1
            self.notify(f"Submitted HIT {hit['hit_id']}.", timeout=2)
            await self._show(await asyncio.to_thread(self.session.current), {})

    @work(exclusive=True, group="annotate")
    async def _undo(self) -> None:
        with self._store_errors():
            sub = await asyncio.to_thread(self.session.undo)
            if sub is None:
                raise EaslError("Nothing to undo: no submission from this annotator yet.")
            self.session_count = max(self.session_count - 1, 0)
            self.notify(f"Retracted HIT {sub.hit_id}.", timeout=3)
            view = await asyncio.to_thread(self.session.current, sub.hit_id)
            await self._show(view, sub.scores if view.hit is not None and view.hit["hit_id"] == sub.hit_id else {})

    # ----------------------------------------------------------------- view
    def compute_progress(self) -> str:
        v = self.view
        if v is None:
            return ""
        return (
            f"iteration {v.iteration} · {v.hits_done} of {v.hits_in_iteration} HITs done · "
            f"{self.session_count} this session · annotator {self.annotator or '?'}"
        )

    def watch_progress(self, text: str) -> None:
        self.query_one("#progress", Static).update(text)

    async def _show(self, view: HitView, prefill: dict) -> None:
        """Replace the rows by the HIT's items; the title is written last, once the first row is current."""
        self.view = view
        self.help_text = annotate_help(view.score_min, view.score_max)
        if view.started_iteration:
            self.notify(f"Iteration {view.iteration} started.", timeout=3)
        container = self.query_one("#items", ItemsScroll)
        await container.remove_children()
        question = self.query_one("#question", Static)
        question.update(view.question or "")
        question.display = bool(view.question)
        if view.hit is None:
            self.query_one("#hit-title", Static).update("No open HIT in this project.")
            self.busy = False
            return
        items = view.hit["items"]
        if not prefill:
            try:
                prefill = load_draft(self.project, self.session.annotator, view.hit["hit_id"])
            except EaslError as exc:
                self.notify(str(exc), severity="warning")
        self._draft = {str(k): float(v) for k, v in prefill.items()}
        rows = [
            ScoreRow(
                k + 1,
                str(it["item_id"]),
                str(it.get("text", "")),
                low=view.score_min,
                high=view.score_max,
                score=prefill.get(str(it["item_id"])),
            )
            for k, it in enumerate(items)
        ]
        await container.mount_all(rows)
        self.select_row(0)
        container.scroll_home(animate=False)
        self.query_one("#hit-title", Static).update(
            f"HIT {view.hit['hit_id']} · {len(items)} items · score each: {view.scale_text()}"
        )
        self.busy = False

    def rows(self) -> list[ScoreRow]:
        """The score rows of the HIT on screen."""
        return list(self.query(ScoreRow))

    # -------------------------------------------------------------- actions
    def action_submit(self) -> None:
        """Submit the HIT when every item has a score."""
        if self.busy or self.view is None or self.view.hit is None:
            return
        rows = self.rows()
        missing = [r for r in rows if r.score is None]
        if missing:
            self.notify(
                f"{len(missing)} item(s) have no score yet: item {missing[0].position} first.", severity="warning"
            )
            self.select_row(missing[0].position - 1)
            return
        self.busy = True
        self._submit(self.view.hit, {r.item_id: float(r.score) for r in rows if r.score is not None})

    def action_undo(self) -> None:
        """Retract the last submission and show that HIT again when it is still open."""
        if self.busy or not self.session.annotator:
            return
        self.busy = True
        self._undo()

    def action_rename(self) -> None:
        """Ask for the annotator's name again (used for the next submissions)."""
        self.app.push_screen(NamePrompt(self.annotator or ""), self._named)

    def select_row(self, index: int) -> None:
        """Make row ``index`` the one the keys edit (wraps around) and scroll it into view."""
        rows = self.rows()
        if not rows:
            return
        self.current = index % len(rows)
        for k, row in enumerate(rows):
            row.set_current(k == self.current)
        self.query_one("#items", ItemsScroll).scroll_to_widget(rows[self.current], animate=False)

    def on_key(self, event: events.Key) -> None:
        """Every annotation key is applied here, in arrival order (see ``BINDINGS``)."""
        key = event.key
        rows = self.rows()
        handled = True
        if key == "enter":
            self.action_submit()
        elif key in ("u", "ctrl+z"):
            self.action_undo()
        elif key == "n":
            self.action_rename()
        elif not rows or self.busy:
            handled = (
                key in self.EDIT_KEYS
                or key in ("tab", "shift+tab", "backspace")
                or (event.character is not None and event.character.isdigit())
            )
        elif key == "tab":
            self.select_row(self.current + 1)
        elif key == "shift+tab":
            self.select_row(self.current - 1)
        elif key in self.EDIT_KEYS:
            method, arg = self.EDIT_KEYS[key]
            getattr(rows[self.current], method)(arg)
        elif key == "backspace":
            rows[self.current].erase()
        elif event.character is not None and len(event.character) == 1 and event.character.isdigit():
            rows[self.current].type_digit(event.character)
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()

    @on(ScoreRow.Clicked)
    def _row_clicked(self, event: ScoreRow.Clicked) -> None:
        self.select_row(event.row.position - 1)

    @on(ScoreRow.Changed)
    def _row_changed(self, event: ScoreRow.Changed) -> None:
        """Keep the draft of the HIT on screen; written to the settings file half a second after the last change
        (and when the screen closes), so quitting in the middle of a HIT loses nothing."""
        event.stop()
        row = event.row
        if row.score is None:
            self._draft.pop(row.item_id, None)
        else:
            self._draft[row.item_id] = float(row.score)
        if self._draft_timer is not None:
            self._draft_timer.stop()
        self._draft_timer = self.set_timer(0.5, self.write_draft)

    def _forget_draft(self) -> None:
        if self._draft_timer is not None:
            self._draft_timer.stop()
        self._draft = {}

    def write_draft(self) -> None:
        """Write the draft of the HIT on screen to the settings file."""
        if self.view is None or self.view.hit is None or not self.annotator:
            return
        try:
            save_draft(self.project, self.annotator, self.view.hit["hit_id"], self._draft)
        except (EaslError, OSError) as exc:
            self.notify(f"Could not save the scores typed so far: {exc}", severity="warning")

    def on_unmount(self) -> None:
        if self._draft_timer is not None:
            self._draft_timer.stop()
        if self._draft:
            self.write_draft()
