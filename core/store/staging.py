"""The stage of an ingest: the candidate rows of a chunk in a temporary table, from which the observation log and the
live index are written by ``INSERT ... SELECT`` (:meth:`core.store.observations.Observations._append`).

Each row's parameters are bound once (``executemany`` costs per bound value), in key order; the columns a model
derives (``score01``, the group key) are computed in SQL as :mod:`core.store.validation` defines them.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


STAGE_COLUMNS = ("source_key", "item_idx", "score_raw", "hit_id", "annotator", "annotation_id", "created_at")
#: the stage's derived columns, as in core.store.validation (``score01 = clip((score_raw - score_min) / span, 0,
#: 1)`` in IEEE double arithmetic, as numpy computes it; the group key of the submission), with the score range bound
#: once per statement as ``:lo`` and ``:span``
DERIVED_SQL = (
    "MIN(MAX((score_raw - :lo) / :span, 0.0), 1.0), "
    "CASE WHEN annotation_id IS NOT NULL THEN 'a' || char(31) || annotation_id "
    "WHEN hit_id IS NOT NULL THEN 'h' || char(31) || hit_id || char(31) || COALESCE(annotator, '') ELSE '' END"
)


def stage(conn: sqlite3.Connection, cand: pd.DataFrame, seq0: int) -> None:
    """(Re)fill ``temp._stage`` with the rows of ``cand`` in key order (rowid order = ``source_key`` order: the
    lookup of the live observations and the live inserts then walk the live B-trees in order, far fewer page reads
    than random order once they outgrow the page cache); ``seq`` = ``seq0`` + the row's position in ``cand``. Only
    the columns given by the input are bound (each bound value costs; ``score01`` and ``group_key`` are derived in
    SQL, :data:`DERIVED_SQL`)."""
    import pandas as pd

    order = np.arange(len(cand))
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS _stage (seq INTEGER NOT NULL, source_key TEXT NOT NULL, item_idx INTEGER, "
        "score_raw REAL, hit_id TEXT, annotator TEXT, annotation_id TEXT, created_at TEXT)"
    )
    conn.execute("DELETE FROM temp._stage")
    names = ["seq"]
    columns = [(order + seq0).tolist()]
    for name in STAGE_COLUMNS:
        col = cand[name].to_numpy()
        if col.dtype == object and name != "source_key" and not pd.notna(col).any():
            continue  # all missing: NULL
        names.append(name)
        columns.append(col[order].tolist())
    conn.executemany(
        f"INSERT INTO temp._stage({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", zip(*columns)
    )
