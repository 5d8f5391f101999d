"""The stage of an ingest: the candidate rows of a chunk in a temporary table, from which the observation log and the
live index are written by ``INSERT ... SELECT`` (:meth:`core.store.observations.Observations._append`).

Each row's parameters are bound once (``executemany`` costs per bound value); the columns a model derives
(``score01``, the group key) are computed in SQL as :mod:`core.store.validation` defines them.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import pandas as pd


STAGE_COLUMNS = ("item_idx", "score_raw", "hit_id", "annotator", "annotation_id", "created_at")


def group_key_sql(of: str = "") -> str:
    """The group key (the HIT submission, :mod:`core.store.validation`) of a staged row as SQL: ``'a' SEP
    annotation_id`` with an annotation id, else ``'h' SEP hit_id SEP annotator`` with a HIT, else empty text
    (``of``: the table's alias and a dot)."""
    return (
        f"CASE WHEN {of}annotation_id IS NOT NULL THEN 'a' || char(31) || {of}annotation_id "
        f"WHEN {of}hit_id IS NOT NULL THEN 'h' || char(31) || {of}hit_id || char(31) || COALESCE({of}annotator, '') "
        "ELSE '' END"
    )


def source_keys(cand: pd.DataFrame) -> NDArray[Any]:
    """The idempotency key (:mod:`core.store.validation`) of each row of ``cand`` as text: ``'a' SEP annotation_id
    SEP item_id`` with an annotation id, else ``'h' SEP hit_id SEP item_id SEP annotator``, a missing part as empty
    text (numpy's element-wise addition of object arrays: the strings SQLite is given are made once, and faster
    than by Arrow's join, whose input conversion costs more, or by SQL concatenation per row)."""
    import pandas as pd

    from core.store.cells import SEP

    def text(name: str, rows: NDArray[Any]) -> NDArray[Any]:
        col = cand[name].to_numpy(dtype=object)[rows]
        return np.where(pd.notna(col), col, "")

    keys = np.empty(len(cand), dtype=object)
    ann = pd.notna(cand["annotation_id"].to_numpy(dtype=object))
    if ann.any():
        keys[ann] = "a" + SEP + text("annotation_id", ann) + (SEP + text("item_id", ann))
    if not ann.all():
        rest = ~ann
        keys[rest] = "h" + SEP + text("hit_id", rest) + (SEP + text("item_id", rest)) + (SEP + text("annotator", rest))
    return keys


#: the stage's derived columns, as in core.store.validation (``score01 = clip((score_raw - score_min) / span, 0,
#: 1)`` in IEEE double arithmetic, as numpy computes it; the group key of the submission), with the score range bound
#: once per statement as ``:lo`` and ``:span``; set by :func:`derive` on the rows to append
DERIVED_SQL = f"score01 = MIN(MAX((score_raw - :lo) / :span, 0.0), 1.0), group_key = {group_key_sql()}"


def derive(conn: sqlite3.Connection, lo: float, span: float) -> None:
    """Set the derived columns of the staged rows (:data:`DERIVED_SQL`), so that the log and the live index are
    written from plain columns: an ``INSERT ... SELECT`` that computes them instead holds, in a large write
    transaction, transient memory that grows with the live index (measured: 117 MB more at 2.5 M live rows,
    growing by about 5 MB per 250,000; none with plain columns)."""
    conn.execute(f"UPDATE temp._stage SET {DERIVED_SQL}", {"lo": lo, "span": span})


def stage(conn: sqlite3.Connection, cand: pd.DataFrame, seq0: int) -> None:
    """(Re)fill ``temp._stage`` with the rows of ``cand``; ``seq`` = ``seq0`` + the row's position in ``cand``. Only
    the columns given by the input are bound (each bound value costs), with the source key (:func:`source_keys`);
    ``score01`` and the group key are derived for the rows to append (:func:`derive`)."""
    import pandas as pd

    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS _stage (seq INTEGER NOT NULL, source_key TEXT NOT NULL, item_idx INTEGER, "
        "score_raw REAL, hit_id TEXT, annotator TEXT, annotation_id TEXT, created_at TEXT, score01 REAL, "
        "group_key TEXT)"
    )
    conn.execute("DELETE FROM temp._stage")
    names = ["seq", "source_key"]
    columns = [np.arange(seq0, seq0 + len(cand), dtype=np.int64).tolist(), source_keys(cand).tolist()]
    for name in STAGE_COLUMNS:
        col = cand[name].to_numpy()
        if col.dtype == object and not pd.notna(col).any():
            continue  # all missing: NULL
        names.append(name)
        columns.append(col.tolist())
    conn.executemany(
        f"INSERT INTO temp._stage({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", zip(*columns)
    )
