"""The front ends' records in the project file: settings (``meta``), the durable event queue (``events``), rejected
inputs (``rejects``) and the ids of outside systems (``external_ids``).

One API per table, with one rule each:

* **meta**: a front end may set and delete any key except those the project manages (:data:`MANAGED_META`).
* **events**: appended ``pending``; finished as ``done`` (optionally with a note) or as ``failed`` (with the
  error) only when the caller says it failed.
* **rejects**: recorded once per ``(source, location, reason)``.
* **external ids**: an outside id maps to one local id for good: mapping it to another raises
  :class:`~core.errors.InputError`; several outside ids may map to one local id; forgetting a mapping
  (:meth:`FrontEndRecords.unmap_external`) is explicit.

Every mutator is one transaction (it joins the caller's :meth:`~core.store.db.Database.transaction`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from easl_toolkit.core.errors import InputError
from easl_toolkit.core.store.db import Database, now

#: Meta keys the project manages; front ends cannot set them.
MANAGED_META = frozenset({"format", "hyper", "item_columns", "state_seq", "state_figures", "created_at", "created_by"})
EVENT_STATUSES = ("pending", "done", "failed")
#: Meta keys of the campaign's wording (what annotators are asked, what the ends of the scale mean).
WORDING_KEYS = {"question": "campaign.question", "low_label": "campaign.low_label", "high_label": "campaign.high_label"}


class Wording(NamedTuple):
    """What annotators are asked (``question``) and what the two ends of the score range mean; None when unset."""

    question: str | None = None
    low_label: str | None = None
    high_label: str | None = None


class Event(NamedTuple):
    """One queued event: ``payload`` is the stored text (JSON); ``note`` the error of a failed event or the note of
    a done one."""

    id: int
    kind: str
    payload: str
    received_at: str
    status: str = "pending"
    note: str | None = None


class Reject(NamedTuple):
    """One rejected input with its reason."""

    id: int
    created_at: str
    source: str
    location: str | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        """``{"id", "created_at", "source", "location", "reason"}`` (the form of ``easl status --json``)."""
        return self._asdict()


def _payload_text(payload: Any) -> str | None:
    if payload is None or isinstance(payload, str):
        return payload
    return json.dumps(payload, sort_keys=True, default=str)


class FrontEndRecords:
    """Meta, events, rejects and external ids."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # ------------------------------------------------------------------------------------------------------ meta

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        """The text value of a ``meta`` key, or ``default``."""
        row = self._db.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else row[0]

    def set_meta(self, values: Mapping[str, str | None]) -> None:
        """Set (or, with None, delete) front-end ``meta`` keys in one transaction.

        Raises ``ValueError`` for a key the project manages (:data:`MANAGED_META`); nothing is written then.
        """
        managed = sorted(set(values) & MANAGED_META)
        if managed:
            raise ValueError(f"meta key {managed[0]!r} is managed by the project and cannot be set.")
        with self._db.writing() as conn:
            conn.executemany("DELETE FROM meta WHERE key = ?", [(k,) for k, v in values.items() if v is None])
            conn.executemany(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [(k, str(v)) for k, v in values.items() if v is not None],
            )

    def wording(self) -> Wording:
        """The campaign's question and scale labels (``easl init --question/--low-label/--high-label``)."""
        return Wording(**{f: self.get_meta(k) for f, k in WORDING_KEYS.items()})

    def set_wording(self, **values: str | None) -> Wording:
        """Set some of ``question``, ``low_label``, ``high_label`` (an empty or blank text removes it); one
        transaction. Returns the wording after the change. Raises ``ValueError`` for another name."""
        unknown = sorted(set(values) - set(WORDING_KEYS))
        if unknown:
            raise ValueError(f"set_wording: unknown field {unknown[0]!r}; expected {sorted(WORDING_KEYS)}.")
        self.set_meta({WORDING_KEYS[f]: (v.strip() or None) if isinstance(v, str) else None for f, v in values.items()})
        return self.wording()

    # ---------------------------------------------------------------------------------------------------- events

    def add_events(self, events: Iterable[tuple[str, Any]], *, received_at: str | None = None) -> list[int]:
        """Append ``(kind, payload)`` events as ``pending`` in one transaction; returns their ids in order.

        ``payload`` is JSON-encoded unless it is text already. ``received_at`` defaults to now; an event may also be
        given as ``(kind, payload, received_at)`` (e.g. moved from a journal with its arrival time).
        """
        stamp = received_at or now()
        ids: list[int] = []
        with self._db.writing() as conn:
            for event in events:
                kind, payload, at = (*event, stamp) if len(event) == 2 else event
                cur = conn.execute(
                    "INSERT INTO events(received_at, kind, payload) VALUES (?, ?, ?)",
                    (at, kind, _payload_text(payload)),
                )
                ids.append(int(cur.lastrowid or 0))
        return ids

    def add_event(self, kind: str, payload: Any) -> int:
        """Append one event (``add_events([(kind, payload)])``); returns its id."""
        return self.add_events([(kind, payload)])[0]

    def events(self, status: str = "pending", *, limit: int | None = None) -> list[Event]:
        """Events of one status in arrival order (the oldest ``limit`` of them; all when None)."""
        if status not in EVENT_STATUSES:
            raise ValueError(f"events: status must be one of {EVENT_STATUSES}, got {status!r}.")
        rows = self._db.conn.execute(
            "SELECT id, kind, payload, received_at, status, error FROM events WHERE status = ? ORDER BY id LIMIT ?",
            (status, -1 if limit is None else int(limit)),
        ).fetchall()
        return [Event(int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), r[5]) for r in rows]

    def finish_event(self, event_id: int, *, failed: bool = False, note: str | None = None) -> None:
        """Mark an event ``done`` (``note``: e.g. why it was ignored) or, with ``failed``, ``failed`` (``note``: the
        error); stamp ``processed_at``. One transaction."""
        with self._db.writing() as conn:
            conn.execute(
                "UPDATE events SET status = ?, error = ?, processed_at = ? WHERE id = ?",
                ("failed" if failed else "done", note, now(), int(event_id)),
            )

    def event_counts(self) -> dict[str, int]:
        """Events per status: ``{"pending": n, "done": n, "failed": n}``."""
        counts = dict(self._db.conn.execute("SELECT status, COUNT(*) FROM events GROUP BY status").fetchall())
        return {k: int(counts.get(k, 0)) for k in EVENT_STATUSES}

    # --------------------------------------------------------------------------------------------------- rejects

    def add_reject(self, *, source: str, location: str | None, reason: str, payload: Any = None) -> bool:
        """Record a rejected input (e.g. a Label Studio annotation that failed validation) once per
        ``(source, location, reason)``; returns True when it is new. One transaction."""
        with self._db.writing() as conn:
            seen = conn.execute(
                "SELECT 1 FROM rejects WHERE source = ? AND location IS ? AND reason = ? LIMIT 1",
                (source, location, reason),
            ).fetchone()
            if seen:
                return False
            conn.execute(
                "INSERT INTO rejects(created_at, source, location, reason, payload) VALUES (?, ?, ?, ?, ?)",
                (now(), source, location, reason, _payload_text(payload)),
            )
        return True

    def rejects(self, *, source: str | None = None, limit: int | None = None) -> tuple[list[Reject], int]:
        """Rejected inputs with their reasons: ``(records, total)``.

        ``records`` are the most recent ``limit`` rejects (all when None) of ``source`` (every source when None),
        oldest first; ``total`` counts every reject of that source, so ``total - len(records)`` were left out.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"rejects: limit must be >= 0, got {limit}.")
        where, params = ("WHERE source = ?", (source,)) if source is not None else ("", ())
        with self._db.reading() as conn:
            total = int(conn.execute(f"SELECT COUNT(*) FROM rejects {where}", params).fetchone()[0])
            rows = conn.execute(
                f"SELECT id, created_at, source, location, reason FROM rejects {where} ORDER BY id DESC LIMIT ?",
                params + (-1 if limit is None else int(limit),),
            ).fetchall()
        return [Reject(int(r[0]), r[1], r[2], r[3], r[4]) for r in reversed(rows)], total

    # ---------------------------------------------------------------------------------------------- external ids

    def map_external(self, kind: str, pairs: Iterable[tuple[object, object]]) -> None:
        """Record ``(external_id, local_id)`` pairs of one kind (ids of an outside system, e.g. Label Studio task
        id -> HIT id); one transaction. A pair already recorded changes nothing.

        Raises
        ------
        InputError
            An external id is already mapped (or given twice) with another local id; nothing is written.
        """
        wanted: dict[str, str] = {}
        for external, local in pairs:
            e, loc = str(external), str(local)
            if wanted.setdefault(e, loc) != loc:
                raise InputError(f"{kind} {e!r} is given for both {wanted[e]!r} and {loc!r}.", field=kind)
        if not wanted:
            return
        with self._db.writing() as conn:
            known = dict(
                conn.execute(
                    "SELECT external_id, local_id FROM external_ids WHERE kind = ? AND external_id "
                    "IN (SELECT value FROM json_each(?))",
                    (kind, json.dumps(list(wanted))),
                ).fetchall()
            )
            for e, loc in wanted.items():
                if known.get(e, loc) != loc:
                    raise InputError(
                        f"{self._db.path}: {kind} {e!r} is already mapped to {known[e]!r}, not {loc!r}.",
                        path=self._db.path,
                        field=kind,
                    )
            conn.executemany(
                "INSERT INTO external_ids(kind, external_id, local_id) VALUES (?, ?, ?)",
                [(kind, e, loc) for e, loc in wanted.items() if e not in known],
            )

    def unmap_external(self, kind: str, external_ids: Iterable[object]) -> None:
        """Forget the mappings of some external ids of one kind (absent ones are ignored); one transaction."""
        with self._db.writing() as conn:
            conn.executemany(
                "DELETE FROM external_ids WHERE kind = ? AND external_id = ?", [(kind, str(e)) for e in external_ids]
            )

    def local_id(self, kind: str, external_id: object) -> str | None:
        """The local id mapped to ``(kind, external_id)``, or None."""
        row = self._db.conn.execute(
            "SELECT local_id FROM external_ids WHERE kind = ? AND external_id = ?", (kind, str(external_id))
        ).fetchone()
        return None if row is None else str(row[0])

    def external_map(self, kind: str) -> dict[str, str]:
        """Every ``external_id -> local_id`` pair of one kind."""
        rows = self._db.conn.execute(
            "SELECT external_id, local_id FROM external_ids WHERE kind = ?", (kind,)
        ).fetchall()
        return {str(e): str(loc) for e, loc in rows}

    def external_ids(self, kind: str, local_id: object) -> list[str]:
        """Every external id of ``kind`` mapped to ``local_id``, in the order they were recorded."""
        rows = self._db.conn.execute(
            "SELECT external_id FROM external_ids WHERE kind = ? AND local_id = ? ORDER BY rowid", (kind, str(local_id))
        ).fetchall()
        return [r[0] for r in rows]
