"""The annotator's work on one project file, apart from the screen that shows it (``AnnotateScreen``).

A submission is one call of ``Project.ingest`` (the validation and transaction path of ``easl ingest``) with the
HIT's rows, all carrying the HIT id, the annotator and one fresh ``annotation_id``; it is written whole or not at
all, so quitting or a crash never loses a submitted HIT nor writes half of one. Undo retracts that annotation id
(``Project.retract``: the observations stay in the log, retracted). Resuming is the project's own state: the next
open HIT is the first one nobody has completed.
"""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from easl_toolkit.core.errors import EaslError

#: What a session's calls raise when the project file refuses or cannot be read: shown to the annotator.
STORE_ERRORS = (EaslError, sqlite3.Error, OSError)

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
        from easl_toolkit.core.store import Project

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
                iteration=status.iteration,
                hits_in_iteration=status.n_hits_open + status.n_hits_complete,
                hits_open=status.n_hits_open,
                score_min=float(project.hyper.score_min),
                score_max=float(project.hyper.score_max),
                started_iteration=started,
                **project.wording()._asdict(),
            )

    def submit(self, hit: dict, scores: dict[str, float]) -> Submission:
        """Ingest the scores of ``hit`` as one annotation (one transaction).

        Raises
        ------
        EaslError
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
