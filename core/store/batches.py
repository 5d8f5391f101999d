"""What an ingest is given and what it reports: :class:`Prepared` (rows validated ahead of the write transaction),
:class:`IngestReport`, and the rejected rows (recorded in the ``rejects`` table; conflicts with an earlier chunk of
the same input, :meth:`core.store.observations.ObservationLog.ingest_chunks`)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.store.db import now
from easl_toolkit.core.store.live_arrays import LiveChanges

if TYPE_CHECKING:
    from concurrent.futures import Future

    import pandas as pd

    from easl_toolkit.core.models import Change, Updated
    from easl_toolkit.core.store.validation import Batch


@dataclass
class IngestReport:
    """What :meth:`ObservationLog.ingest` did.

    Attributes
    ----------
    n_rows : rows given.
    new : observations for keys that had no live observation.
    duplicate : rows whose key already had this very score (nothing changed), including repeats in the batch.
    superseded : rows that replaced the live score of their key with a different one.
    rejected : invalid rows (only with ``skip_invalid``; otherwise the whole batch is refused).
    rejects : DataFrame ``location, field, reason, item_id, score, hit_id, annotator, annotation_id``.
    rebuilt : True when the state was rebuilt by replay (order-dependent model after a supersede).
    transactions : the write transactions it took (:meth:`ObservationLog.ingest_slices`: one per slice).
    """

    n_rows: int = 0
    new: int = 0
    duplicate: int = 0
    superseded: int = 0
    rejected: int = 0
    rejects: Any = None
    rebuilt: bool = False
    transactions: int = 1

    def __post_init__(self) -> None:
        if self.rejects is None:
            import pandas as pd

            self.rejects = pd.DataFrame()

    def as_dict(self) -> dict[str, Any]:
        """The counts as a JSON-ready dict."""
        return {
            "rows": self.n_rows,
            "new": self.new,
            "duplicate": self.duplicate,
            "superseded": self.superseded,
            "rejected": self.rejected,
            "rebuilt": self.rebuilt,
        }


@dataclass(frozen=True)
class Prepared:
    """Annotation rows validated by :meth:`ObservationLog.prepare`, to pass to :meth:`ObservationLog.ingest`.

    Attributes
    ----------
    path : the project file they were validated against.
    name : file name or source (for messages).
    frame, locations : the normalised rows and their locations.
    batch : core.store.validation.Batch (``batch.rejects`` lists the invalid rows with reasons).
    hit_ids, fingerprint : the HITs the rows name, and which of them existed / were retracted at validation.
    """

    path: str
    name: str
    frame: pd.DataFrame
    locations: Any  # core.store.cells.Locations
    batch: Batch
    hit_ids: list[str]
    fingerprint: tuple[Any, ...]


@dataclass
class Carry:
    """What one ingest of several chunks (:meth:`ObservationLog.ingest_chunks`) carries from chunk to chunk, written
    once before its commit.

    Attributes
    ----------
    change : the change of the live log so far, for the model (``core.models.Change``: the scores that became
        live and those withdrawn, in order).
    seq : the log position the change reaches.
    since : the first log position the ingest appended (None: nothing appended yet).
    live : what the ingest did to the live index, for a model that reads the whole live log
        (:class:`core.store.live_arrays.LiveChanges`).
    hits : ids of the HITs to refresh.
    complete : ids of HITs marked complete already (:func:`completed_hits`), not refreshed from the live index.
    updating : the model's update, started before the last chunk was copied to the live index
        (:meth:`core.store.derived.Replay.start_update`); None: not started.
    """

    change: Change = field(default_factory=lambda: _change())
    seq: int = 0
    since: int | None = None
    live: LiveChanges = field(default_factory=LiveChanges)
    hits: set[str] = field(default_factory=set)
    complete: set[str] = field(default_factory=set)
    updating: Future[Updated] | None = None


def _change() -> Change:
    from easl_toolkit.core.models import Change

    return Change()


def completed_hits(rows: pd.DataFrame) -> set[str]:
    """The HITs of which every item has a row in ``rows`` (the rows one chunk appends, with validation's
    ``hit_pos``, ``hit_size``, ``item_idx`` and ``hit_id``). A HIT whose items come in several chunks, or partly
    from earlier ingests, is not found here (its status is recomputed)."""
    pos = rows["hit_pos"].to_numpy(dtype=np.int64)
    has = pos >= 0
    if not has.any():
        return set()
    pos, item = pos[has], rows["item_idx"].to_numpy(dtype=np.int64)[has]
    n_hits, width = int(pos.max()) + 1, int(item.max()) + 1
    got = np.bincount(np.unique(pos * width + item) // width, minlength=n_hits)
    need = np.zeros(n_hits, dtype=np.int64)
    need[pos] = rows["hit_size"].to_numpy(dtype=np.int64)[has]
    ids = np.empty(n_hits, dtype=object)
    ids[pos] = rows["hit_id"].to_numpy(dtype=object)[has]
    return set(ids[(got == need) & (need > 0)].tolist())


def named_hits(frame: pd.DataFrame) -> list[str]:
    """The distinct HIT ids a batch of annotation rows names."""
    import pandas as pd

    from easl_toolkit.core.store.validation import id_strings

    cells = frame["hit_id"].to_numpy(dtype=object)
    if pd.api.types.infer_dtype(cells, skipna=True) == "string":  # (to pd.unique, True and 1 are one value)
        cells = pd.unique(cells)  # each distinct cell once: a HIT has many rows
    padded = not frame.attrs.get("unpadded", False)  # (core.tables.Table.unpadded)
    ids = id_strings(pd.Series(cells, dtype=object), padded=padded).to_numpy(dtype=object)
    return [str(h) for h in pd.unique(ids[pd.notna(ids)]).tolist()]


def hit_fingerprint(conn: sqlite3.Connection, ids: list[str]) -> tuple[Any, ...]:
    """What validation reads of the project besides fixed data: which of ``ids`` exist and are retracted."""
    if not ids:
        return ()
    return tuple(
        conn.execute(
            "SELECT hit_id, status = 'retracted' FROM hits WHERE hit_id IN "
            "(SELECT value FROM json_each(?)) ORDER BY hit_id",
            (json.dumps(ids),),
        ).fetchall()
    )


def record_rejects(conn: sqlite3.Connection, rejects: pd.DataFrame, source: str) -> None:
    """Add rejected rows, with their reasons, to the ``rejects`` table."""
    n = len(rejects)
    payload = (
        rejects[["item_id", "score", "hit_id", "annotator", "annotation_id"]]
        .to_json(orient="records", lines=True, force_ascii=False, default_handler=str)
        .splitlines()
    )
    conn.executemany(
        "INSERT INTO rejects(created_at, source, location, reason, payload) VALUES (?, ?, ?, ?, ?)",
        zip(
            [now()] * n,
            [source] * n,
            rejects["location"].tolist(),
            (rejects["field"] + ": " + rejects["reason"]).tolist(),
            payload,
        ),
    )


def conflict_reasons(has_ann: NDArray[Any]) -> NDArray[Any]:
    """Why a row whose key got a different score from an earlier chunk of the same input is rejected (``has_ann``:
    the row has an annotation id)."""
    return np.where(
        has_ann,
        "conflicts with an earlier row of the same input (same annotation_id and item, different score)",
        "conflicts with an earlier row of the same input (same item, HIT and annotator, different "
        "score); give each score an annotation_id or an annotator",
    )


def conflict_rejects(moved: pd.DataFrame, where: NDArray[Any]) -> tuple[pd.DataFrame, list[str]]:
    """The rejects (and their messages) of valid rows whose key got a different score from an earlier chunk of the
    same input."""
    import pandas as pd

    reasons = conflict_reasons(moved["annotation_id"].notna().to_numpy())
    extra = pd.DataFrame(
        {
            "location": where,
            "field": "score",
            "reason": reasons,
            "item_id": moved["item_id"].to_numpy(),
            "score": moved["score_raw"].to_numpy(),
            "hit_id": moved["hit_id"].to_numpy(),
            "annotator": moved["annotator"].to_numpy(),
            "annotation_id": moved["annotation_id"].to_numpy(),
        }
    )
    return extra, [f"{loc}: score: {why}" for loc, why in zip(extra["location"], extra["reason"])]
