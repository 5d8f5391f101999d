"""A spill journal for webhook events that arrive while the project file is busy.

The webhook writer stores each event in the project file's ``events`` table before acknowledging it. While the
file's write lock is taken, by the worker (tens of milliseconds) or by another process (``easl ingest`` holds it
for its whole transaction: minutes for a large file), waiting for it would hold up Label Studio's submit request,
which gives up after 1 s and never retries; instead the writer appends the events to this journal, an append-only
file next to the project (``<project>.ls-journal``, one JSON line per event, flushed to disk before the
acknowledgement), and moves them into ``events`` as soon as the lock is free, in arrival order, before anything
newer. Appending needs no lock of the project file: the journal has one writer, the service's writer thread.

Exactly once: each journal line carries a unique id; the move inserts the events and records the id of the last
record moved (``meta`` key ``ls.journal_moved``) in one transaction, then clears the journal. After a crash
between the two, the records up to that id are skipped. A torn last line (a crash while writing it) belongs to an
event that was never acknowledged, so it is dropped.
"""

from __future__ import annotations

import json
import os
import uuid

MOVED_KEY = "ls.journal_moved"

#: Flush written data to the disk; ``fdatasync`` skips the time stamps that ``fsync`` also writes (SQLite makes the
#: same choice for its WAL).
_sync = getattr(os, "fdatasync", os.fsync)

#: the journal is created with, and grows in steps of, this many bytes of zeros (some 3,500 events of 1.2 KB)
GROW_BYTES = 4 << 20


def journal_path(project_path: str) -> str:
    """Where the journal of a project file lives."""
    return f"{project_path}.ls-journal"


class Journal:
    """Append-only JSON-lines file of ``{"uid", "kind", "payload", "received_at"}`` records.

    The file is preallocated: the records are followed by zero bytes up to its size, which is at least
    :data:`GROW_BYTES` from the start and grows that much at a time (zeros written and flushed with ``fsync``,
    file size included; clearing keeps the space). An append then overwrites zeros in place and flushes with
    ``fdatasync``, which has no file-system metadata to commit (no new blocks, no new size): on ext4 a metadata
    commit waits for every other file's data that the file system journal orders before it, and while an
    ``easl ingest`` writes gigabytes that took hundreds of milliseconds
    (measured with 1 KB written and flushed every 50 ms beside an ingest of 150 MB, 2 shared cores: p99 71 ms and
    max 450 ms appending, 24 ms and 149 ms overwriting zeros). The records end at the first zero byte (JSON text
    has none).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        raw = self._raw()
        data = raw.split(b"\0", 1)[0]
        self._end = data.rfind(b"\n") + 1  # complete lines only: a torn last line was never acknowledged
        if raw[self._end :].strip(b"\0"):  # a torn line, or bytes beyond the records: zeros, so new ones start clean
            self._write(b"\0" * (len(raw) - self._end), self._end)
            os.fsync(self._fd)
        self._size = len(raw)
        if self._size < GROW_BYTES:  # preallocated now, before any acknowledgement waits for it
            self._write(b"\0" * (GROW_BYTES - self._size), self._size)
            os.fsync(self._fd)
            self._size = GROW_BYTES
        self.count = len(self.read())

    def close(self) -> None:
        """Close the file (its content stays until moved)."""
        os.close(self._fd)

    def append(self, events: list[tuple[str, str]], received_at: str) -> list[str]:
        """Append ``(kind, payload JSON)`` events durably (written in place + fdatasync; when the file must
        grow, written with the zeros of the new space + fsync); returns their unique ids."""
        uids = [uuid.uuid4().hex for _ in events]
        lines = b"".join(
            json.dumps({"uid": u, "kind": k, "payload": p, "received_at": received_at}).encode() + b"\n"
            for u, (k, p) in zip(uids, events)
        )
        end = self._end + len(lines)
        if end > self._size:
            size = (end // GROW_BYTES + 1) * GROW_BYTES
            self._write(lines + b"\0" * (size - end), self._end)
            os.fsync(self._fd)  # (the new size too)
            self._size = size
        else:
            self._write(lines, self._end)
            _sync(self._fd)
        self._end = end
        self.count += len(events)
        return uids

    def read(self) -> list[dict]:
        """Every complete record, oldest first (a torn last line is ignored)."""
        if not os.path.exists(self.path):
            return []
        with open(self.path, "rb") as f:
            data = f.read().split(b"\0", 1)[0]
        out = []
        for line in data.split(b"\n")[:-1]:  # the last piece is empty or a torn line
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # not a complete record
        return out

    def clear(self) -> None:
        """Empty the journal (after its records are committed to the project file), keeping its space: zeros
        over the records, in two flushed steps so that no crash can leave a part of them readable.

        First the first byte (one sector: written whole or not at all): the journal reads as empty from then
        on; before it, every record is still there and the move skips them all (``meta`` key
        ``ls.journal_moved``, committed with the moved events). Then the rest, so that no byte of an old record
        can follow a new one. Both are ``fdatasync``: data only, no metadata to commit.
        """
        if self._end:
            self._write(b"\0", 0)
            _sync(self._fd)
            self._write(b"\0" * (self._end - 1), 1)
            _sync(self._fd)
        self._end = 0
        self.count = 0

    def _raw(self) -> bytes:
        size = os.fstat(self._fd).st_size
        return os.pread(self._fd, size, 0) if size else b""

    def _write(self, data: bytes, offset: int) -> None:
        view = memoryview(data)
        while view:
            n = os.pwrite(self._fd, view, offset)
            view, offset = view[n:], offset + n
