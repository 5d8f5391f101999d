"""Retracting observations: a ``retract`` record per live observation withdrawn (deleted Label Studio annotations,
withdrawn HITs), and the model's state after the withdrawal (``Model.update``:
:meth:`core.store.derived.Replay.update`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

import numpy as np

from easl_toolkit.core.errors import ProjectFileError
from easl_toolkit.core.store.db import Database, fill_temp, max_seq, now
from easl_toolkit.core.store.derived import Replay
from easl_toolkit.core.store.hit_rows import refresh_hits
from easl_toolkit.core.store.live_arrays import LiveChanges
from easl_toolkit.core.store.settings import Settings


def _annotation_ids(values: Iterable[Any]) -> list[str]:
    """The distinct annotation ids given, stripped, without empty ones, sorted."""
    return sorted({str(a).strip() for a in values if a is not None and str(a).strip()})


class Retractions:
    """Retraction of live observations, and the versions of annotations now live."""

    def __init__(self, db: Database, settings: Settings, replay: Replay) -> None:
        self._db = db
        self._settings = settings
        self._replay = replay

    def retract(self, annotation_ids: Iterable[Any], *, source: str) -> int:
        """Retract every live observation of the given annotation ids (e.g. deleted Label Studio annotations), as
        the module docstring says; one transaction. Returns the number of observations retracted (0 when none were
        live: retracting twice changes nothing)."""
        ids = _annotation_ids(annotation_ids)
        if not ids:
            return 0
        with self._db.writing() as conn:
            fill_temp(conn, "_ann_ids", ids)
            return self._retract_where(conn, "l.annotation_id IN (SELECT v FROM temp._ann_ids)", (), source)

    def live_versions(self, annotation_ids: Iterable[Any]) -> dict[str, str]:
        """``annotation_id -> created_at`` of the newest live score of each given annotation id that has one (the
        time stamp of the version now live, as its source gave it). Reads only."""
        ids = _annotation_ids(annotation_ids)
        if not ids:
            return {}
        with self._db.reading() as conn:
            fill_temp(conn, "_ann_ids", ids)
            rows = conn.execute(
                "SELECT l.annotation_id, MAX(o.created_at) FROM live l JOIN observations o ON o.seq = l.seq "
                "WHERE l.annotation_id IN (SELECT v FROM temp._ann_ids) GROUP BY l.annotation_id"
            ).fetchall()
        return {str(a): str(t) for a, t in rows if t is not None}

    def retract_hit(self, hit_id: str, *, source: str) -> int:
        """Withdraw a HIT (e.g. its Label Studio task was deleted): retract its live observations and mark it
        ``retracted`` so that it no longer counts toward the completion of its iteration. One transaction.
        Returns the number of observations retracted.

        Raises ``ProjectFileError`` when the project has no such HIT."""
        with self._db.writing() as conn:
            row = conn.execute("SELECT status FROM hits WHERE hit_id = ?", (hit_id,)).fetchone()
            if row is None:
                raise ProjectFileError(self._db.path, f"unknown HIT {hit_id!r}")
            n = self._retract_where(conn, "l.hit_id = ?", (hit_id,), source)
            conn.execute("UPDATE hits SET status = 'retracted' WHERE hit_id = ?", (hit_id,))
            return n

    def _retract_where(self, conn: sqlite3.Connection, where: str, params: tuple[Any, ...], source: str) -> int:
        rows = conn.execute(
            f"SELECT l.source_key, l.item_idx, l.score01, l.hit_id, l.seq FROM live l WHERE {where} ORDER BY l.seq",
            params,
        ).fetchall()
        if not rows:
            return 0
        stamp = now()
        seq0 = max_seq(conn) + 1
        conn.execute(
            "INSERT INTO observations(seq, source_key, kind, item_idx, score01, score_raw, hit_id, annotator, "
            "annotation_id, group_key, created_at, source) "
            f"SELECT ? + ROW_NUMBER() OVER (ORDER BY l.seq) - 1, o.source_key, 'retract', o.item_idx, NULL, NULL, "
            f"o.hit_id, o.annotator, o.annotation_id, o.group_key, ?, ? FROM live l JOIN observations o "
            f"ON o.seq = l.seq WHERE {where} ORDER BY l.seq",
            (seq0, stamp, source) + params,
        )
        conn.execute(f"DELETE FROM live WHERE source_key IN (SELECT l.source_key FROM live l WHERE {where})", params)
        from easl_toolkit.core.models import Change, Scores

        item = np.asarray([r[1] for r in rows], dtype=np.int64)
        s01 = np.asarray([r[2] for r in rows], dtype=np.float64)
        changes = LiveChanges(base=seq0 - 1)
        changes.remove([r[4] for r in rows])
        change = Change(steps=[(-1, Scores(item, s01))])
        state = self._replay.update(conn, change, self._replay.log(conn, changes=changes)).state
        self._replay.save_state(conn, state, max_seq(conn))
        refresh_hits(conn, sorted({r[3] for r in rows if r[3] is not None}))
        return len(rows)
