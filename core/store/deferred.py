"""The live index of a large ingest, built once at its end (``core.store.observations.ObservationLog.ingest_chunks``).

An ingest of :data:`LARGE_INPUT_BYTES` or more appends its rows to the log only, and the live index gets them at its
end from one sorted pass over the log (:func:`settle`: ``INSERT OR IGNORE ... ORDER BY source_key, seq`` keeps the
first row of each key). Each chunk still looks its keys up in the live index of the keys live before the ingest (a
row repeating one is a duplicate or supersedes it: :func:`remove_live`). A key two rows of the input share is left to
the end: the later row is a duplicate when its score is the first one's, else a conflict (rejected); either way it
leaves the log. :class:`Places` keeps on disk where the deferred rows came from, for the messages of such conflicts.
Why the index is deferred: docs/studies/code-notes.md.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.store.log_rows import LIVE_COLUMNS

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pandas as pd

    from easl_toolkit.core.store.cells import Locations

#: the input size from which ``easl ingest`` defers the live index: below it the index kept chunk by chunk costs
#: about as much as the sorted pass, and is built while the next chunk is validated (a 1 GB file: the README).
LARGE_INPUT_BYTES = 96 * 2**20

#: the page cache (KiB) of a deferred ingest before its end: it appends to the log, whose pages are written once
DEFERRED_CACHE_KIB = 32768

#: repeated keys read back per query at the end of an ingest
READ_SLICE = 100_000


class Places:
    """Where each deferred row came from (``"file:line"``), by log position: the line numbers in a temporary file
    (8 bytes a row, not in memory), the texts of locations given as texts (small inputs) in memory."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close)
        self._parts: list[tuple[int, int, str, int, NDArray[Any] | None]] = []  # (seq0, n, prefix, offset, texts)
        self._offset = 0

    def add(self, seq0: int, locations: Locations, rows: NDArray[Any]) -> None:
        """Record that log positions ``seq0, seq0 + 1, ...`` are the rows ``rows`` of a chunk with ``locations``."""
        if locations.texts is not None:
            self._parts.append((seq0, len(rows), "", 0, np.asarray(locations.texts)[rows]))
            return
        numbers = np.asarray(locations.numbers, dtype=np.int64)[rows]
        numbers.tofile(self._file)
        self._parts.append((seq0, len(rows), locations.prefix, self._offset, None))
        self._offset += numbers.nbytes

    def __getitem__(self, seq: int) -> str:
        for seq0, n, prefix, offset, texts in self._parts:
            if seq0 <= seq < seq0 + n:
                if texts is not None:
                    return str(texts[seq - seq0])
                self._file.seek(offset + 8 * (seq - seq0))
                return f"{prefix}{int(np.frombuffer(self._file.read(8), dtype=np.int64)[0])}"
        raise KeyError(seq)

    def close(self) -> None:
        self._file.close()


@dataclass
class Repeats:
    """The deferred rows whose key an earlier deferred row has (:func:`settle`): their log positions, items,
    ``score01``, HITs, whether each is a duplicate (the same score as the first row of its key), and the rejects
    and messages of the others (conflicts)."""

    seq: NDArray[Any] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    item_idx: NDArray[Any] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    score01: NDArray[Any] = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    hit_ids: set[str] = field(default_factory=set)
    duplicate: int = 0
    rejects: pd.DataFrame | None = None
    messages: list[str] = field(default_factory=list)


def remove_live(conn: sqlite3.Connection, keys: list[str]) -> None:
    """Remove the live rows of ``keys`` (keys a deferred row supersedes)."""
    if keys:
        conn.execute("DELETE FROM live WHERE source_key IN (SELECT value FROM json_each(?))", (json.dumps(keys),))


@contextmanager
def pragmas(conn: sqlite3.Connection, **values: int | str) -> Iterator[None]:
    """Set the connection's ``PRAGMA`` ``values`` in the block, and restore the values they had."""
    before = {name: conn.execute(f"PRAGMA {name}").fetchone()[0] for name in values}
    for name, value in values.items():
        conn.execute(f"PRAGMA {name} = {value}")
    try:
        yield
    finally:
        for name, value in before.items():
            conn.execute(f"PRAGMA {name} = {value}")


def settle(conn: sqlite3.Connection, start: int, places: Places) -> Repeats:
    """Index the log rows from position ``start`` on (the deferred rows) in the live index, in one pass in key
    order; a key several of them share keeps its first row. The later rows of such keys are returned
    (:class:`Repeats`) and removed from the log."""
    import pandas as pd

    from easl_toolkit.core.store.db import max_seq

    n_rows = max_seq(conn) - start + 1  # (the deferred rows have consecutive positions)
    # the sorter spills to temporary files (not the connection's temp_store = MEMORY), with one helper thread (the
    # other core is idle at the end), in runs of 64 MiB that also bound the page cache: the peak-memory target
    with pragmas(conn, temp_store="FILE", threads=1, cache_size=-65536):
        added = conn.execute(
            f"INSERT OR IGNORE INTO live({LIVE_COLUMNS}) SELECT {LIVE_COLUMNS} FROM observations WHERE seq >= ? "
            "ORDER BY source_key, seq",
            (start,),
        ).rowcount
        if added == n_rows:
            return Repeats()
        cur = conn.execute(
            "SELECT r.seq, r.score_raw, r.first_raw, r.item_idx, r.score01, r.hit_id, r.annotator, r.annotation_id, "
            "i.item_id FROM (SELECT seq, score_raw, item_idx, score01, hit_id, annotator, annotation_id, "
            "first_value(score_raw) OVER w AS first_raw, row_number() OVER w AS k FROM observations WHERE seq >= ? "
            "WINDOW w AS (PARTITION BY source_key ORDER BY seq)) r JOIN items i ON i.idx = r.item_idx WHERE r.k > 1 "
            "ORDER BY r.seq",
            (start,),
        )
        names = [d[0] for d in cur.description]
        parts = []
        while rows := cur.fetchmany(READ_SLICE):
            parts.append(pd.DataFrame(rows, columns=names))
    found = pd.concat(parts, ignore_index=True)
    same = found["score_raw"].to_numpy(dtype=np.float64) == found["first_raw"].to_numpy(dtype=np.float64)
    seq = found["seq"].to_numpy(dtype=np.int64)
    for lo in range(0, len(seq), READ_SLICE):
        conn.execute(
            "DELETE FROM observations WHERE seq IN (SELECT value FROM json_each(?))",
            (json.dumps(seq[lo : lo + READ_SLICE].tolist()),),
        )
    out = Repeats(
        seq=seq,
        item_idx=found["item_idx"].to_numpy(dtype=np.int64),
        score01=found["score01"].to_numpy(dtype=np.float64),
        hit_ids=set(found["hit_id"].dropna().tolist()),
        duplicate=int(same.sum()),
    )
    clash = found[~same]
    if len(clash):
        from easl_toolkit.core.store.batches import conflict_rejects

        where = np.asarray([places[s] for s in clash["seq"].tolist()], dtype=object)
        out.rejects, out.messages = conflict_rejects(clash, where)
    return out
