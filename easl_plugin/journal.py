"""A spill journal for webhook events that arrive while the project file is busy.

The webhook writer stores each event in the project file's ``events`` table before acknowledging it. While the
file's write lock is taken, by the worker (tens of milliseconds) or by another process (``easl ingest`` holds it
for its whole transaction: minutes for a large file), waiting for it would hold up Label Studio's submit request,
which gives up after 1 s and never retries; instead the writer appends the events to this journal, an append-only
file next to the project (``<project>.ls-journal``, one JSON line per event, flushed to disk before the
acknowledgement), and moves them into ``events`` as soon as the lock is free, in arrival order, before anything
newer. Appending needs no lock of the project file: the journal has one writer, the service's writer thread.

Exactly once: each journal line carries a unique id; the move inserts the events and records the id of the last
record moved (``meta`` key ``ls.journal_moved``) in one transaction, then truncates the journal. After a crash
between the two, the records up to that id are skipped. A torn last line (a crash while writing it) belongs to an
event that was never acknowledged, so it is dropped.
"""

from __future__ import annotations

import json
import os
import uuid

MOVED_KEY = "ls.journal_moved"

#: Flush written data (and the file size, which reading it back needs) to the disk; ``fdatasync`` skips the
#: time stamps that ``fsync`` also writes (SQLite makes the same choice for its WAL).
_sync = getattr(os, "fdatasync", os.fsync)


def journal_path(project_path: str) -> str:
    """Where the journal of a project file lives."""
    return f"{project_path}.ls-journal"


class Journal:
    """Append-only JSON-lines file of ``{"uid", "kind", "payload", "received_at"}`` records."""

    def __init__(self, path: str) -> None:
        self.path = path
        if os.path.exists(path):
            with open(path, "rb+") as f:  # cut a torn last line, so that new lines start clean
                data = f.read()
                if data and not data.endswith(b"\n"):
                    f.truncate(data.rfind(b"\n") + 1)
        self._fh = open(path, "ab")  # noqa: SIM115  (open for the journal's life; closed by close())
        self.count = len(self.read())

    def close(self) -> None:
        """Close the file (its content stays until moved)."""
        self._fh.close()

    def append(self, events: list[tuple[str, str]], received_at: str) -> list[str]:
        """Append ``(kind, payload JSON)`` events durably (write + fdatasync); returns their unique ids."""
        uids = [uuid.uuid4().hex for _ in events]
        lines = b"".join(
            json.dumps({"uid": u, "kind": k, "payload": p, "received_at": received_at}).encode() + b"\n"
            for u, (k, p) in zip(uids, events)
        )
        self._fh.write(lines)
        self._fh.flush()
        _sync(self._fh.fileno())
        self.count += len(events)
        return uids

    def read(self) -> list[dict]:
        """Every complete record, oldest first (a torn last line is ignored)."""
        if not os.path.exists(self.path):
            return []
        with open(self.path, "rb") as f:
            data = f.read()
        out = []
        for line in data.split(b"\n")[:-1]:  # the last piece is empty or a torn line
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # not a complete record
        return out

    def clear(self) -> None:
        """Empty the journal (after its records are committed to the project file).

        No fsync: if a crash loses the truncation, the records come back, and the move skips them (``meta`` key
        ``ls.journal_moved``, committed with the moved events); the next ``append`` fsyncs the file whole.
        """
        self._fh.truncate(0)
        self._fh.flush()
        self.count = 0
