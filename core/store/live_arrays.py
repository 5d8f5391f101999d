"""The aware model's live log as arrays (table ``live_arrays``, schema version 3): what its refit reads.

The store keeps the refit's input (:meth:`core.store.derived.Replay.refit`) beside the model state, reflecting the log
up to ``meta.live_arrays_seq``: the log position, item, annotator code and ``score01`` of every live score in log
order, and the annotators' names by code, numbered in order of their first score in the log (as
:func:`core.store.derived.annotator_codes`; ``None`` is the one anonymous annotator). A refit reads them, applies
what its transaction changed (:class:`LiveChanges`) and writes them back; where they do not reflect the log at the
transaction's start (a file of an older version, or after ``rebuild``), it reads the live index instead. A refit so
reads no table (measurements: docs/studies/code-notes.md); ``easl verify`` checks that the stored arrays equal the
live index.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

SEQ_KEY = "live_arrays_seq"  #: the ``meta`` key of the log position the stored arrays reflect
_DTYPES = {"seq": "<i8", "item": "<i4", "annotator": "<i4", "score01": "<f8"}


@dataclass
class LiveArrays:
    """The live scores in log order and the annotators' names by code.

    Attributes
    ----------
    seq, item, annotator : ndarray of int64
        Log position, item index and annotator code of each live score.
    score01 : ndarray of float64
    names : list
        Annotator names by code (``None``: the anonymous annotator).
    """

    seq: NDArray[Any]
    item: NDArray[Any]
    annotator: NDArray[Any]
    score01: NDArray[Any]
    names: list[Any]

    def same_as(self, other: LiveArrays) -> bool:
        """Whether both hold the same rows and names (bit for bit)."""
        return self.names == other.names and all(
            np.array_equal(getattr(self, k), getattr(other, k)) for k in ("seq", "item", "annotator", "score01")
        )


@dataclass
class LiveChanges:
    """What a transaction changed in the live index, for :func:`apply`: where it started (``base``, the last log
    position before it appended anything), the score rows it appended (``(seq0, item, annotator codes, annotator
    names, score01)`` per part, consecutive positions from ``seq0``, in log order; the codes index the part's own
    names, in order of their first row) and the positions of rows that left the live index (superseded or
    retracted rows, and appended rows removed from the log again). Each part's annotators are coded as it is
    added, off the path from an ingest's last chunk to its commit (docs/studies/code-notes.md)."""

    base: int | None = None
    parts: list[tuple[int, NDArray[Any], NDArray[Any], list[Any], NDArray[Any]]] = field(default_factory=list)
    removed: list[NDArray[Any]] = field(default_factory=list)

    def add(self, seq0: int, item: NDArray[Any], annotators: Any, score01: NDArray[Any]) -> None:
        """Record the rows appended at ``seq0, seq0 + 1, ...`` with their annotators' names (``None``: none
        given); the first part also sets ``base``."""
        import pandas as pd

        if self.base is None:
            self.base = seq0 - 1
        codes, uniques = pd.factorize(pd.Series(annotators, dtype=object), use_na_sentinel=False)
        names = [None if pd.isna(name) else name for name in uniques.tolist()]
        self.parts.append((seq0, np.asarray(item, dtype=np.int64), codes.astype(np.int64), names, np.asarray(score01)))

    def remove(self, seqs: Any) -> None:
        """Record that the rows at log positions ``seqs`` left the live index."""
        seqs = np.asarray(seqs, dtype=np.int64)
        if seqs.size:
            self.removed.append(seqs)


def load(conn: sqlite3.Connection, at: int) -> LiveArrays | None:
    """The stored arrays if they reflect the log up to position ``at``, else None (position 0: the empty log, whose
    live log is empty, stored or not)."""
    if at == 0:
        empty = np.zeros(0, dtype=np.int64)
        return LiveArrays(empty, empty.copy(), empty.copy(), np.zeros(0), [])
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (SEQ_KEY,)).fetchone()
    if row is None or int(row[0]) != at:
        return None
    data = {name: (dtype, blob) for name, dtype, blob in conn.execute("SELECT name, dtype, data FROM live_arrays")}
    if set(data) != set(_DTYPES) | {"names"}:
        return None
    arrays = {k: np.frombuffer(data[k][1], dtype=np.dtype(data[k][0])).astype(np.int64) for k in _DTYPES}
    arrays["score01"] = np.frombuffer(data["score01"][1], dtype="<f8").copy()
    return LiveArrays(names=json.loads(data["names"][1]), **arrays)


def save(conn: sqlite3.Connection, live: LiveArrays, seq: int) -> None:
    """Store ``live`` as reflecting the log up to position ``seq`` (replacing what was stored)."""
    conn.execute("DELETE FROM live_arrays")
    shape = json.dumps([int(live.seq.size)])
    rows = [
        (name, dtype, shape, np.ascontiguousarray(getattr(live, name), dtype=dtype).tobytes())
        for name, dtype in _DTYPES.items()
    ]
    rows.append(("names", "json", json.dumps([len(live.names)]), json.dumps(live.names).encode()))
    conn.executemany("INSERT INTO live_arrays(name, dtype, shape, data) VALUES (?, ?, ?, ?)", rows)
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (SEQ_KEY, str(int(seq))),
    )


def clear(conn: sqlite3.Connection) -> None:
    """Drop the stored arrays (the next refit reads the live index)."""
    conn.execute("DELETE FROM live_arrays")
    conn.execute("DELETE FROM meta WHERE key = ?", (SEQ_KEY,))


def apply(live: LiveArrays, changes: LiveChanges) -> LiveArrays:
    """``live`` (the arrays at ``changes.base``) with ``changes`` applied: the removed positions dropped, the
    appended rows added after them; annotators first seen in the appended rows get the next codes, in order of
    their first row (the log order, as a replay numbers them).

    Examples
    --------
    >>> old = LiveArrays(np.array([1, 2]), np.array([0, 1]), np.array([0, 0]), np.array([.5, .6]), ["ann"])
    >>> ch = LiveChanges()
    >>> ch.add(3, np.array([1, 0]), ["bob", None], np.array([.7, .8]))
    >>> ch.remove([2])
    >>> new = apply(old, ch)
    >>> new.seq.tolist(), new.annotator.tolist(), new.names
    ([1, 3, 4], [0, 1, 2], ['ann', 'bob', None])
    """
    import pandas as pd

    removed = np.concatenate(changes.removed) if changes.removed else np.zeros(0, dtype=np.int64)
    seqs = [live.seq] + [seq0 + np.arange(item.size, dtype=np.int64) for seq0, item, *_ in changes.parts]
    seq = np.concatenate(seqs)
    keep = ~np.isin(seq, removed) if removed.size else np.ones(seq.size, dtype=bool)
    n_old = live.seq.size
    # each part's codes made global (a name of two parts has two such codes), then renumbered in order of first
    # appearance among the kept rows: appended rows removed again left the log, so they name no annotator
    starts = np.cumsum([0] + [len(part_names) for _, _, _, part_names, _ in changes.parts])
    added = np.concatenate([np.zeros(0, dtype=np.int64)] + [c + k for (_, _, c, _, _), k in zip(changes.parts, starts)])
    codes, uniques = pd.factorize(added[keep[n_old:]])
    all_names = [name for _, _, _, part_names, _ in changes.parts for name in part_names]
    names = list(live.names)
    lookup = {name: k for k, name in enumerate(names)}
    mapped = np.empty(len(uniques), dtype=np.int64)
    for k, name in enumerate(all_names[u] for u in uniques.tolist()):
        if name not in lookup:
            lookup[name] = len(names)
            names.append(name)
        mapped[k] = lookup[name]
    item = np.concatenate([live.item] + [item for _, item, *_ in changes.parts])
    score01 = np.concatenate([live.score01] + [np.asarray(part[4], dtype=np.float64) for part in changes.parts])
    annotator = np.concatenate([live.annotator[keep[:n_old]], mapped[codes]])
    return LiveArrays(seq[keep], item[keep], annotator, score01[keep], names)
