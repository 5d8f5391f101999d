"""Annotate: score the next open HIT of a project by keyboard, submit it, undo the last submission.

A submission is one call of ``Project.ingest`` (the validation and transaction path of ``easl ingest``) with the
HIT's rows, all carrying the HIT id, the annotator and one fresh ``annotation_id``; it is written whole or not at
all, so quitting or a crash never loses a submitted HIT nor writes half of one. Undo retracts that annotation id
(``Project.retract``: the observations stay in the log, retracted). Resuming is the project's own state: the next
open HIT is the first one nobody has completed.
"""

from __future__ import annotations

import contextlib
import sqlite3
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, Static

from core.errors import UserError
from tui.screens.name_prompt import NamePrompt
from tui.settings import clear_draft, load_draft, remember_annotator, remembered_annotator, save_draft
from tui.widgets.score_row import ScoreRow

if TYPE_CHECKING:
    from tui.app import EaslApp

#: ``source`` recorded with every observation this screen writes.
SOURCE = "tui"


@dataclass
class Submission:
    """One submitted HIT: what undo needs to retract it and to show it again."""

    hit_id: str
    annotation_id: str
    iteration: int
    scores: dict[str, float] = field(default_factory=dict)


@dataclass
class HitView:
    """The HIT on screen and the progress figures around it."""

    hit: dict | None
    iteration: int
    hits_in_iteration: int
    hits_open: int
    score_min: float = 0.0
    score_max: float = 100.0
    started_iteration: bool = False
    question: str | None = None
    low_label: str | None = None
    high_label: str | None = None

    def scale_text(self) -> str:
        """The score range with what its two ends mean, e.g. ``0 = not fluent ... 100 = perfectly fluent``."""
        low = f"{self.score_min:g} = {self.low_label}" if self.low_label else f"{self.score_min:g}"
        high = f"{self.score_max:g} = {self.high_label}" if self.high_label else f"{self.score_max:g}"
        return f"{low} ... {high}"

    @property
    def hits_done(self) -> int:
        """HITs of the current iteration already complete."""
        return max(self.hits_in_iteration - self.hits_open, 0)


class AnnotationSession:
    """The annotator's work on one project file, independent of the screen (each call opens the project, so it
    can run in any thread and never holds the file between calls).

    Parameters
    ----------
    path : Path
        The project file.
    annotator : str
        Recorded with every score.
    """

    def __init__(self, path: Path, annotator: str) -> None:
        self.path = Path(path)
        self.annotator = annotator
        self.submissions: list[Submission] = []

    def _open(self):
        from core.store import Project

        return Project.open(self.path)

    def current(self, prefer_hit: str | None = None) -> HitView:
        """The HIT to annotate now: ``prefer_hit`` when it is still open, else the first open HIT of the current
        iteration; when every HIT is complete, the next iteration is started (``Project.next_hits``)."""
        with self._open() as project:
            hits = project.open_hits()
            started = False
            if not hits:
                before = project.iteration()
                hits = project.next_hits()
                started = project.iteration() != before
            status = project.status()
            chosen = None
            if prefer_hit is not None:
                chosen = next((h for h in hits if h["hit_id"] == prefer_hit), None)
            if chosen is None and hits:
                chosen = hits[0]
            return HitView(
                hit=chosen,
                iteration=int(status["iteration"]),
                hits_in_iteration=int(status["n_hits_open"]) + int(status["n_hits_complete"]),
                hits_open=int(status["n_hits_open"]),
                score_min=float(project.hyper.score_min),
                score_max=float(project.hyper.score_max),
                started_iteration=started,
                **project.wording()._asdict(),
            )

    def submit(self, hit: dict, scores: dict[str, float]) -> Submission:
        """Ingest the scores of ``hit`` as one annotation (one transaction).

        Raises
        ------
        UserError
            When the project rejects the rows (the message names the item and the reason).
        """
        annotation_id = f"tui-{uuid.uuid4().hex}"
        created = datetime.now(UTC).isoformat(timespec="seconds")
        rows = [
            {
                "item_id": item["item_id"],
                "score": float(scores[item["item_id"]]),
                "hit_id": hit["hit_id"],
                "annotator": self.annotator,
                "annotation_id": annotation_id,
                "created_at": created,
                "location": f"terminal session:{hit['hit_id']}:{k + 1}",
            }
            for k, item in enumerate(hit["items"])
        ]
        with self._open() as project:
            project.ingest(rows, source=SOURCE)
        sub = Submission(
            hit_id=hit["hit_id"],
            annotation_id=annotation_id,
            iteration=int(hit.get("iteration", -1)),
            scores=dict(scores),
        )
        self.submissions.append(sub)
        return sub

    def last_submission(self) -> Submission | None:
        """The annotator's latest live submission from this terminal: this session's, else the project's log."""
        if self.submissions:
            return self.submissions[-1]
        with self._open() as project:
            ratings = project.ratings()
        if ratings.empty:
            return None
        mine = ratings[
            (ratings["annotator"] == self.annotator) & ratings["annotation_id"].astype(str).str.startswith("tui-")
        ]
        if mine.empty:
            return None
        last_id = mine["annotation_id"].iloc[-1]
        rows = mine[mine["annotation_id"] == last_id]
        iteration = rows["iteration"].iloc[0]
        return Submission(
            hit_id=str(rows["hit_id"].iloc[0]),
            annotation_id=str(last_id),
            iteration=int(iteration) if np.isfinite(float(iteration)) else -1,
            scores=dict(zip(rows["item_id"].astype(str), rows["score"].astype(float))),
        )

    def undo(self) -> Submission | None:
        """Retract the last submission (``Project.retract``); returns it, or None when there is nothing to undo."""
        sub = self.last_submission()
        if sub is None:
            return None
        with self._open() as project:
            project.retract([sub.annotation_id], source=SOURCE)
        if self.submissions and self.submissions[-1].annotation_id == sub.annotation_id:
            self.submissions.pop()
        return sub


class ItemsScroll(VerticalScroll, can_focus=False):
    """The HIT's rows (not focusable: the screen receives every key)."""


class AnnotateScreen(Screen):
    """Score the items of the next open HIT (0-100 by default) and submit."""

    if TYPE_CHECKING:
        app: EaslApp  # the screen runs only inside easl's app

    HELP = """\
**Annotate** — score every item of the HIT, then submit.

| key | action |
|---|---|
| ← / → | score −1 / +1 |
| ↓ / ↑ | score −10 / +10 (a tenth of the range) |
| Home / End | lowest / highest score |
| digits | type a score (e.g. `7` `5` gives 75) |
| Backspace | erase the last digit |
| Tab / Shift+Tab | next / previous item |
| Enter | submit the HIT (every item needs a score) |
| u or Ctrl+Z | undo the last submission (retracts it) |
| n | change the annotator's name |

Scores typed for a HIT not yet submitted are kept as a draft and come back when the project is opened again.
"""

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

    def __init__(self) -> None:
        super().__init__()
        self.session: AnnotationSession | None = None
        self.view: HitView | None = None
        self.busy = False
        self.session_count = 0
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
        name = self.app.annotator
        if name is None:
            try:
                name = remembered_annotator()
            except (UserError, sqlite3.Error, OSError) as exc:
                self.notify(str(exc), severity="error", timeout=8)
                name = None
        if name is None:
            self.app.push_screen(NamePrompt(), self._named)
        else:
            self._start(name)

    def _named(self, name: str | None) -> None:
        if not name:
            if self.session is None:
                self.query_one("#hit-title", Static).update("An annotator name is needed: press n to enter it.")
            return
        try:
            name = remember_annotator(name)
        except (UserError, OSError) as exc:
            self.notify(f"The name is used for this session but could not be saved: {exc}", severity="warning")
        self._start(name)

    def _start(self, name: str) -> None:
        self.app.annotator = name
        if self.session is None:
            self.session = AnnotationSession(self.app.project, name)
        else:
            self.session.annotator = name
        self.load_hit()

    # ------------------------------------------------------------- workers
    @work(thread=True, exclusive=True, group="annotate")
    def load_hit(self, prefer_hit: str | None = None, prefill: dict | None = None) -> None:
        """Fetch the HIT to show (in a thread: never blocks the keyboard)."""
        try:
            view = self._session().current(prefer_hit)
        except (UserError, sqlite3.Error, OSError) as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error", timeout=8)
            return
        self.app.call_from_thread(self._show, view, prefill or {})  # type: ignore[arg-type]  # textual: R | Awaitable[R]

    @work(thread=True, exclusive=True, group="annotate")
    def _submit_worker(self, hit: dict, scores: dict[str, float]) -> None:
        session = self._session()
        try:
            session.submit(hit, scores)
        except (UserError, sqlite3.Error, OSError) as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        self.app.call_from_thread(self._forget_draft)
        with contextlib.suppress(UserError, OSError):  # a stale draft is ignored once its HIT is complete
            clear_draft(session.path, session.annotator)
        self.session_count += 1
        self.app.call_from_thread(self.notify, f"Submitted HIT {hit['hit_id']}.", timeout=2)
        try:
            view = session.current()
        except (UserError, sqlite3.Error, OSError) as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        self.app.call_from_thread(self._show, view, {})  # type: ignore[arg-type]  # textual: R | Awaitable[R]

    @work(thread=True, exclusive=True, group="annotate")
    def _undo_worker(self) -> None:
        session = self._session()
        try:
            sub = session.undo()
        except (UserError, sqlite3.Error, OSError) as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        if sub is None:
            self.app.call_from_thread(self._failed, "Nothing to undo: no submission from this annotator yet.")
            return
        self.session_count = max(self.session_count - 1, 0)
        self.app.call_from_thread(self.notify, f"Retracted HIT {sub.hit_id}.", timeout=3)
        try:
            view = session.current(prefer_hit=sub.hit_id)
        except (UserError, sqlite3.Error, OSError) as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        prefill = sub.scores if view.hit is not None and view.hit["hit_id"] == sub.hit_id else {}
        self.app.call_from_thread(self._show, view, prefill)  # type: ignore[arg-type]  # textual: R | Awaitable[R]

    def _session(self) -> AnnotationSession:
        """The session the workers use (they start only after :meth:`_start` has made it)."""
        if self.session is None:
            raise RuntimeError("no annotation session yet")
        return self.session

    def _failed(self, message: str) -> None:
        self.busy = False
        self.notify(message, severity="error", timeout=8)

    # ----------------------------------------------------------------- view
    def _progress_text(self) -> str:
        v = self.view
        name = self.app.annotator or "?"
        if v is None:
            return f"annotator {name}"
        return (
            f"iteration {v.iteration} · {v.hits_done} of {v.hits_in_iteration} HITs done · "
            f"{self.session_count} this session · annotator {name}"
        )

    async def _show(self, view: HitView, prefill: dict) -> None:
        """Replace the rows by the HIT's items; the title is written last, once the first row is current."""
        self.view = view
        if view.started_iteration:
            self.notify(f"Iteration {view.iteration} started.", timeout=3)
        container = self.query_one("#items", ItemsScroll)
        await container.remove_children()
        self.query_one("#progress", Static).update(self._progress_text())
        question = self.query_one("#question", Static)
        question.update(view.question or "")
        question.display = bool(view.question)
        if view.hit is None:
            self.query_one("#hit-title", Static).update("No open HIT in this project.")
            self.busy = False
            return
        low, high = view.score_min, view.score_max
        items = view.hit["items"]
        if not prefill:
            try:
                prefill = load_draft(self.app.project, self._session().annotator, view.hit["hit_id"])
            except UserError as exc:
                self.notify(str(exc), severity="warning")
        self._draft = {str(k): float(v) for k, v in prefill.items()}
        rows = [
            ScoreRow(
                k + 1,
                str(it["item_id"]),
                str(it.get("text", "")),
                low=low,
                high=high,
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
        self._submit_worker(self.view.hit, {r.item_id: float(r.score) for r in rows if r.score is not None})

    def action_undo(self) -> None:
        """Retract the last submission and show that HIT again when it is still open."""
        if self.busy or self.session is None:
            return
        self.busy = True
        self._undo_worker()

    def action_rename(self) -> None:
        """Ask for the annotator's name again (used for the next submissions)."""
        self.app.push_screen(NamePrompt(self.app.annotator or ""), self._named)

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
        if self.view is None or self.view.hit is None or not self.app.annotator:
            return
        try:
            save_draft(self.app.project, self.app.annotator, self.view.hit["hit_id"], self._draft)
        except (UserError, OSError) as exc:
            self.notify(f"Could not save the scores typed so far: {exc}", severity="warning")

    def on_unmount(self) -> None:
        if self._draft_timer is not None:
            self._draft_timer.stop()
        if self._draft:
            self.write_draft()
