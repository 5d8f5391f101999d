"""An ingest in slices (``easl ingest --commit-every``, :meth:`core.store.observations.ObservationLog.ingest_slices`):
one transaction of a large input would hold the write lock for minutes while another writer (the Label Studio
service's event queue) waits. So:

1. **Check** (:func:`check_input`): every chunk is validated through a read-only connection, without the write lock.
   Conflicts between chunks (a key given another score earlier in the input) are found from two 64-bit hashes of
   each valid row's key, written to :data:`PARTS` temporary files by hash and sorted one file at a time, so that
   memory does not grow with the input. An invalid row refuses the input before anything is written (unless
   ``skip_invalid``).
2. **Append** (:func:`slices`): the input again, without the rows the check rejected, in slices of at least
   ``rows`` rows, one transaction each.

The project then holds what one transaction would have written (the rejects too); after a killed ingest, the same
command completes it, each row already ingested being a duplicate.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.store.batches import conflict_reasons, conflict_rejects
from easl_toolkit.core.store.log_rows import source_keys

if TYPE_CHECKING:
    import pandas as pd

    from easl_toolkit.core.store.cells import Locations
    from easl_toolkit.core.store.validation import Batch
    from easl_toolkit.core.tables import Table

    Validate = Callable[[pd.DataFrame, Locations], Batch]

#: temporary files of the check's key hashes, one per range of the first hash
PARTS = 16

#: the two hashes of a row's idempotency key are Python's (SipHash, keyed per process: the check runs in one) of the
#: key and of the key followed by this text; two keys share both with probability 2**-128
SALT = "\x1f"

#: what the check writes per valid row: its key's hashes, its score, its line, whether it has an annotation id and
#: whether it repeats an earlier row of its chunk (same key and score)
RECORD = np.dtype([("h1", "<u8"), ("h2", "<u8"), ("score", "<f8"), ("line", "<i8"), ("ann", "?"), ("repeat", "?")])


@dataclass
class Checked:
    """What :func:`check_input` found: the messages of the invalid rows, chunk by chunk as one transaction lists
    them (validation's, then the conflicts with an earlier chunk); each chunk's rejects from validation; the sorted
    lines of the conflicts and of every row left out (``dropped``: those and the rows validation refused, and the
    repeats of a conflicting row, which are duplicates, ``duplicate`` of them)."""

    n_rows: int = 0
    name: str = ""
    duplicate: int = 0
    messages: list[str] = field(default_factory=list)
    rejects: list[pd.DataFrame] = field(default_factory=list)
    conflicts: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    dropped: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def check_input(chunks: Iterable[Table], source: str, validate: Validate) -> Checked:
    """Validate every chunk of a file (``validate(frame, locations)``) and find the rows whose key got a
    different score in an earlier chunk (from the first valid row of the key)."""
    from easl_toolkit.core.store.validation import normalize_rows

    checked, prefix, refused = Checked(name=source), "", []
    ends: list[tuple[int, int]] = []  # each chunk's: the messages so far, its last line
    with ExitStack() as stack:
        parts = [stack.enter_context(tempfile.TemporaryFile()) for _ in range(PARTS)]
        for chunk in chunks:
            frame, locations, checked.name = normalize_rows(chunk, source)
            batch = validate(frame, locations)
            checked.n_rows, prefix = checked.n_rows + len(frame), locations.prefix
            checked.messages.extend(batch.messages)
            checked.rejects.append(batch.rejects)
            refused.append(np.delete(locations.numbers, batch.valid["row"].to_numpy()))
            last = int(locations.numbers[-1]) if len(frame) else (ends[-1][1] if ends else 0)
            ends.append((len(checked.messages), last))
            _spill(parts, batch.valid, locations)
        lines, ann, repeats = _conflicts(parts)
    texts = [f"{prefix}{n}: score: {why}" for n, why in zip(lines.tolist(), conflict_reasons(ann).tolist())]
    cut = np.searchsorted(lines, [end for _, end in ends], side="right").tolist()
    checked.messages = [
        text
        for k, (at, _) in enumerate(ends)
        for text in checked.messages[ends[k - 1][0] if k else 0 : at] + texts[cut[k - 1] if k else 0 : cut[k]]
    ]
    checked.conflicts, checked.duplicate = lines, len(repeats)
    checked.dropped = np.unique(np.concatenate([lines, repeats, *refused]))
    return checked


def _spill(parts: list[Any], valid: pd.DataFrame, locations: Locations) -> None:
    """Write the :data:`RECORD` of each ``valid`` row to the part of its first hash."""
    keys, n = source_keys(valid), len(valid)
    rec = np.empty(n, dtype=RECORD)
    rec["h1"] = np.fromiter(map(hash, keys), dtype=np.int64, count=n).view(np.uint64)
    rec["h2"] = np.fromiter((hash(k + SALT) for k in keys), dtype=np.int64, count=n).view(np.uint64)
    rec["score"] = valid["score_raw"].to_numpy(dtype=np.float64)
    rec["line"] = locations.numbers[valid["row"].to_numpy()]
    rec["ann"] = valid["annotation_id"].notna().to_numpy()
    rec["repeat"] = valid["repeat"].to_numpy(dtype=bool)
    part = (rec["h1"] >> np.uint64(60)).astype(np.int64) % PARTS
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(PARTS + 1))
    for p, (a, b) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        if b > a:
            rec[order[a:b]].tofile(parts[p])


def _conflicts(parts: list[Any]) -> tuple[NDArray[np.int64], NDArray[np.bool_], NDArray[np.int64]]:
    """The lines (sorted) of the spilled rows whose score differs from the first row of their key, and whether
    each has an annotation id; apart, the lines of those that repeat a row of their chunk."""
    found = []
    for f in parts:
        f.seek(0)
        rec = np.fromfile(f, dtype=RECORD)
        rec = rec[np.lexsort((rec["line"], rec["h2"], rec["h1"]))]
        head = np.ones(len(rec), dtype=bool)
        head[1:] = (rec["h1"][1:] != rec["h1"][:-1]) | (rec["h2"][1:] != rec["h2"][:-1])
        found.append(rec[rec["score"] != rec["score"][np.flatnonzero(head)][np.cumsum(head) - 1]])
    rec = np.concatenate([np.zeros(0, dtype=RECORD), *found])
    rec = rec[np.argsort(rec["line"])]
    alone = ~rec["repeat"]
    return rec["line"][alone], rec["ann"][alone], rec["line"][~alone]


def kept_rows(chunks: Iterable[Table], checked: Checked, source: str, validate: Validate) -> Iterator[Table]:
    """The chunks without the rows :func:`check_input` left out; each chunk's rejects (validation's, then the
    conflicts', as :func:`core.store.batches.conflict_rejects` words them) replace ``checked.rejects``."""
    import pandas as pd

    from easl_toolkit.core.store.validation import normalize_rows

    given, checked.rejects = checked.rejects, []
    for k, chunk in enumerate(chunks):
        lines = np.asarray(chunk.lines)
        drop = np.isin(lines, checked.dropped)
        clash = np.isin(lines, checked.conflicts)
        parts = [given[k]]
        if clash.any():
            frame, locations, _ = normalize_rows(_rows(chunk, clash), source)
            valid = validate(frame, locations).valid
            parts.append(conflict_rejects(valid, locations[valid["row"].to_numpy()])[0])
        if any(len(p) for p in parts):
            checked.rejects.append(pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0])
        yield _rows(chunk, ~drop) if drop.any() else chunk


def _rows(table: Table, keep: NDArray[np.bool_]) -> Table:
    """The rows ``keep`` of ``table``."""
    import pyarrow as pa

    arrow = None if table.arrow is None else {k: v.filter(pa.array(keep)) for k, v in table.arrow.items()}
    frame = table.frame[keep].reset_index(drop=True)
    return replace(table, frame=frame, lines=np.asarray(table.lines)[keep], arrow=arrow)


def slices(chunks: Iterable[Table], size: Callable[[], int]) -> Iterator[Iterator[Table]]:
    """The chunks in consecutive slices of at least ``size()`` rows (the last may have fewer); each slice must be
    read to its end before the next is asked for."""
    chunks = iter(chunks)
    pending = next(chunks, None)
    while pending is not None:
        limit = size()

        def one(limit: int = limit) -> Iterator[Table]:
            nonlocal pending
            n = 0
            while pending is not None and (n == 0 or n < limit):
                chunk, pending = pending, None
                n += len(chunk.frame)
                yield chunk
                pending = next(chunks, None)

        yield one()
