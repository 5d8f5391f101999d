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

if TYPE_CHECKING:
    import pandas as pd


STAGE_COLUMNS = ("item_idx", "score_raw", "hit_id", "annotator", "annotation_id", "created_at")


def keys(cand: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The idempotency key and the group key (:mod:`core.store.validation`) of each row of ``cand`` as text.

    Source key: ``'a' SEP annotation_id SEP item_id`` with an annotation id, else ``'h' SEP hit_id SEP item_id SEP
    annotator``, a missing part (None) as empty text. Group key (the HIT submission): ``'a' SEP annotation_id``
    with an annotation id, else ``'h' SEP hit_id SEP annotator`` with a HIT, else empty text. Made as the lists
    SQLite is given, by one formatted string per row: half the time of numpy's element-wise addition of object
    arrays, and faster than Arrow's join (whose input conversion costs more) or SQL concatenation per row."""
    from core.store.cells import SEP as S

    ann, hit = cand["annotation_id"].tolist(), cand["hit_id"].tolist()
    item, who = cand["item_id"].tolist(), cand["annotator"].tolist()
    source = [
        f"a{S}{a}{S}{i}" if a is not None else f"h{S}{h or ''}{S}{i}{S}{w or ''}"
        for a, h, i, w in zip(ann, hit, item, who)
    ]
    group = [
        f"a{S}{a}" if a is not None else f"h{S}{h}{S}{w or ''}" if h is not None else ""
        for a, h, w in zip(ann, hit, who)
    ]
    return source, group


@dataclass
class StagedRows:
    """The rows of a chunk to stage (:func:`stage`), made ready outside the write transaction (in the thread of
    :class:`core.store.ahead.ReadAhead`): the valid rows that do not repeat an earlier row of the batch, and the
    parameters :func:`stage` binds for them, by column."""

    cand: pd.DataFrame
    names: list[str]
    columns: list[list[Any]]


def staged_rows(valid: pd.DataFrame) -> StagedRows:
    """:class:`StagedRows` of a validated batch's ``valid`` rows. Only the columns given by the input are kept
    (each bound value costs), with the keys (:func:`keys`) and ``score01`` (validation's ``clip((score_raw -
    score_min) / span, 0, 1)``)."""
    from core.store.cells import present

    cand = valid[~valid["repeat"].to_numpy()].reset_index(drop=True)
    source, group = keys(cand)
    names = ["source_key", "group_key", "score01"]
    columns = [source, group, cand["score01"].to_numpy(dtype=np.float64).tolist()]
    for name in STAGE_COLUMNS:
        col = cand[name].to_numpy()
        if col.dtype == object and not present(col).any():
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
