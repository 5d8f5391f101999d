"""The stage of an ingest: the candidate rows of a chunk in a temporary table, from which the observation log and the
live index are written by ``INSERT ... SELECT`` (:meth:`core.store.observations.Observations._append`).

Each row's parameters are bound once (``executemany`` costs per bound value), the keys and ``score01`` with them,
as :mod:`core.store.validation` defines them.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import pandas as pd


STAGE_COLUMNS = ("item_idx", "score_raw", "hit_id", "annotator", "annotation_id", "created_at")


def keys(cand: pd.DataFrame) -> tuple[NDArray[Any], NDArray[Any]]:
    """The idempotency key and the group key (:mod:`core.store.validation`) of each row of ``cand`` as text.

    Source key: ``'a' SEP annotation_id SEP item_id`` with an annotation id, else ``'h' SEP hit_id SEP item_id SEP
    annotator``, a missing part as empty text. Group key (the HIT submission): ``'a' SEP annotation_id`` with an
    annotation id, else ``'h' SEP hit_id SEP annotator`` with a HIT, else empty text. Made by numpy's element-wise
    addition of object arrays: the strings SQLite is given are made once, faster than by Arrow's join (whose input
    conversion costs more) or by SQL concatenation per row."""
    import pandas as pd

    from core.store.cells import SEP

    def text(name: str, rows: NDArray[Any]) -> NDArray[Any]:
        col = cand[name].to_numpy(dtype=object)[rows]
        return np.where(pd.notna(col), col, "")

    source = np.empty(len(cand), dtype=object)
    group = np.full(len(cand), "", dtype=object)
    ann = pd.notna(cand["annotation_id"].to_numpy(dtype=object))
    if ann.any():
        tag = "a" + SEP + text("annotation_id", ann)
        source[ann], group[ann] = tag + (SEP + text("item_id", ann)), tag
    if not ann.all():
        rest = ~ann
        hit, who = text("hit_id", rest), SEP + text("annotator", rest)
        source[rest] = "h" + SEP + hit + (SEP + text("item_id", rest)) + who
        with_hit = rest & pd.notna(cand["hit_id"].to_numpy(dtype=object))
        group[with_hit] = "h" + SEP + text("hit_id", with_hit) + (SEP + text("annotator", with_hit))
    return source, group


@dataclass
class StagedRows:
    """The rows of a chunk to stage (:func:`stage`), made ready outside the write transaction (in the thread of
    :func:`core.store.ahead.read_ahead`): the valid rows that do not repeat an earlier row of the batch, and the
    parameters :func:`stage` binds for them, by column."""

    cand: pd.DataFrame
    names: list[str]
    columns: list[list[Any]]


def staged_rows(valid: pd.DataFrame) -> StagedRows:
    """:class:`StagedRows` of a validated batch's ``valid`` rows. Only the columns given by the input are kept
    (each bound value costs), with the keys (:func:`keys`) and ``score01`` (validation's ``clip((score_raw -
    score_min) / span, 0, 1)``)."""
    import pandas as pd

    cand = valid[~valid["repeat"].to_numpy()].reset_index(drop=True)
    source, group = keys(cand)
    names = ["source_key", "group_key", "score01"]
    columns = [source.tolist(), group.tolist(), cand["score01"].to_numpy(dtype=np.float64).tolist()]
    for name in STAGE_COLUMNS:
        col = cand[name].to_numpy()
        if col.dtype == object and not pd.notna(col).any():
            continue  # all missing: NULL
        names.append(name)
        columns.append(col.tolist())
    return StagedRows(cand, names, columns)


def stage(conn: sqlite3.Connection, rows: StagedRows, seq0: int) -> None:
    """(Re)fill ``temp._stage`` with ``rows``; ``seq`` = ``seq0`` + the row's position. The log and the live index
    are then copied from plain columns: an ``INSERT ... SELECT`` that computes columns holds, in a large write
    transaction, transient memory that grows with the live index (measured: 117 MB more at 2.5 M live rows,
    growing by about 5 MB per 250,000; none with plain columns)."""
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS _stage (seq INTEGER NOT NULL, source_key TEXT NOT NULL, item_idx INTEGER, "
        "score_raw REAL, hit_id TEXT, annotator TEXT, annotation_id TEXT, created_at TEXT, score01 REAL, "
        "group_key TEXT)"
    )
    conn.execute("DELETE FROM temp._stage")
    names = ["seq", *rows.names]
    seq = np.arange(seq0, seq0 + len(rows.cand), dtype=np.int64).tolist()
    conn.executemany(
        f"INSERT INTO temp._stage({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
        zip(seq, *rows.columns),
    )
