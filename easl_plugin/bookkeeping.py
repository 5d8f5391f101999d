"""The plugin's records in the project file: the durable event queue, rejects, id maps and settings.

Uses the store's generic front-end tables (``core/store/schema.py``): ``events`` (the queue: ``pending`` ->
``done`` | ``failed``), ``rejects`` (annotations refused, with the reason), ``external_ids`` (Label Studio task
id -> HIT id as kind ``ls.task``; annotation id -> task id as kind ``ls.annotation``) and ``meta`` (keys
``ls.*``). Every write is one short transaction through ``Project.transaction()``.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Iterable

from core.store import Project

SOURCE = "label-studio"
TASK = "ls.task"
ANNOTATION = "ls.annotation"
KEY_PROJECT_ID = "ls.project_id"
KEY_URL = "ls.url"
KEY_LAYOUT = "ls.layout"
KEY_LAST_RECONCILIATION = "ls.last_reconciliation"
KEY_RECONCILIATION_REPORT = "ls.last_reconciliation_report"
KEY_PUSH_PENDING = "ls.push_pending"


def now() -> str:
    """UTC time stamp, ISO 8601 with microseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def open_project(path: str) -> Project:
    """Open the project file for this thread (each thread keeps its own connection)."""
    return Project.open(path)


def enqueue(project: Project, events: list[tuple[str, str]]) -> list[int]:
    """Append ``(kind, payload JSON)`` events as ``pending`` in one transaction; return their row ids."""
    stamp = now()
    ids = []
    with project.transaction():
        conn = project.connection
        for kind, payload in events:
            cur = conn.execute("INSERT INTO events (received_at, kind, payload, status) VALUES (?, ?, ?, 'pending')",
                               (stamp, kind, payload))
            ids.append(int(cur.lastrowid))
    return ids


def pending(project: Project, limit: int = 256) -> list[tuple[int, str, str]]:
    """The oldest pending events, ``(id, kind, payload)``, in arrival order."""
    rows = project.connection.execute(
        "SELECT id, kind, payload FROM events WHERE status = 'pending' ORDER BY id LIMIT ?", (limit,)).fetchall()
    return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]


def finish(project: Project, event_id: int, *, error: str | None = None, failed: bool = False) -> None:
    """Mark an event ``done`` (``error`` may hold a note, e.g. why it was ignored) or ``failed``."""
    with project.transaction():
        project.connection.execute("UPDATE events SET status = ?, error = ?, processed_at = ? WHERE id = ?",
                                   ("failed" if failed else "done", error, now(), event_id))


def queue_counts(project: Project) -> dict[str, int]:
    """Events per status."""
    rows = project.connection.execute("SELECT status, COUNT(*) FROM events GROUP BY status").fetchall()
    out = {"pending": 0, "done": 0, "failed": 0}
    out.update({str(s): int(n) for s, n in rows})
    return out


def add_reject(project: Project, location: str, reason: str, payload: object) -> bool:
    """Record a rejected annotation once per (location, reason); returns True when it is new."""
    with project.transaction():
        conn = project.connection
        seen = conn.execute("SELECT 1 FROM rejects WHERE source = ? AND location = ? AND reason = ? LIMIT 1",
                            (SOURCE, location, reason)).fetchone()
        if seen:
            return False
        conn.execute("INSERT INTO rejects (created_at, source, location, reason, payload) VALUES (?, ?, ?, ?, ?)",
                     (now(), SOURCE, location, reason, json.dumps(payload, sort_keys=True)))
    return True


def rejects(project: Project) -> list[dict]:
    """Rejected Label Studio annotations, oldest first (``Project.rejects`` of source ``label-studio``)."""
    return project.rejects(source=SOURCE)[0]


def put_ids(project: Project, kind: str, pairs: Iterable[tuple[object, object]]) -> None:
    """Record ``external_id -> local_id`` pairs of one kind (an existing pair is overwritten)."""
    with project.transaction():
        project.connection.executemany(
            "INSERT INTO external_ids (kind, external_id, local_id) VALUES (?, ?, ?) "
            "ON CONFLICT (kind, external_id) DO UPDATE SET local_id = excluded.local_id",
            [(kind, str(e), str(loc)) for e, loc in pairs])


def local_id(project: Project, kind: str, external_id: object) -> str | None:
    """The local id mapped to ``external_id``, or None."""
    row = project.connection.execute("SELECT local_id FROM external_ids WHERE kind = ? AND external_id = ?",
                                     (kind, str(external_id))).fetchone()
    return None if row is None else str(row[0])


def id_map(project: Project, kind: str) -> dict[str, str]:
    """Every ``external_id -> local_id`` pair of one kind."""
    rows = project.connection.execute("SELECT external_id, local_id FROM external_ids WHERE kind = ?",
                                      (kind,)).fetchall()
    return {str(e): str(loc) for e, loc in rows}


def drop_ids(project: Project, kind: str, external_ids: Iterable[object]) -> None:
    """Forget some pairs of one kind."""
    with project.transaction():
        project.connection.executemany("DELETE FROM external_ids WHERE kind = ? AND external_id = ?",
                                       [(kind, str(e)) for e in external_ids])


def get_meta(project: Project, key: str) -> str | None:
    """A meta value, or None."""
    row = project.connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(project: Project, values: dict[str, str | None]) -> None:
    """Set (or, with None, delete) meta keys in one transaction."""
    with project.transaction():
        for key, value in values.items():
            if value is None:
                project.connection.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                project.connection.execute(
                    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, value))


def move_journal(project: Project, records: list[dict]) -> list[int]:
    """Insert journaled events (``easl_plugin.journal``) into ``events`` in order, skipping those a previous move
    committed (up to the uid in ``meta`` ``ls.journal_moved``); one transaction. Returns the new row ids."""
    from easl_plugin.journal import MOVED_KEY

    ids: list[int] = []
    with project.transaction():
        moved = get_meta(project, MOVED_KEY)
        uids = [r["uid"] for r in records]
        start = uids.index(moved) + 1 if moved in uids else 0
        for r in records[start:]:
            cur = project.connection.execute(
                "INSERT INTO events (received_at, kind, payload, status) VALUES (?, ?, ?, 'pending')",
                (r["received_at"], r["kind"], r["payload"]))
            ids.append(int(cur.lastrowid))
        if records[start:]:
            set_meta(project, {MOVED_KEY: records[-1]["uid"]})
    return ids

