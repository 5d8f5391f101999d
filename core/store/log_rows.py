"""The rows an ingest appends to the observation log (:meth:`core.store.observations.ObservationLog._append`): their
keys, their parameters by column (:func:`log_rows`, made in the read-ahead thread), the lookup of the live
observations they meet (:func:`live_matches`), and the append itself (:func:`append_log`), from which the live
index is copied by ``INSERT ... SELECT`` of plain columns (:func:`copy_to_live`). Each row's parameters are bound
once, straight into the log: its keys and ``score01`` with them, as :mod:`core.store.validation` defines them.
"""

from __future__ import annotations

import json
import operator
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.store.db import insert_rows

if TYPE_CHECKING:
    import pandas as pd


#: the live index's columns, copied from the log's (:func:`copy_to_live`, :func:`core.store.deferred.settle`)
LIVE_COLUMNS = "source_key, seq, item_idx, score01, group_key, score_raw, hit_id, annotation_id"

#: the columns of the log bound from the input, when it gives them (besides the keys and ``score01``)
GIVEN_COLUMNS = ("item_idx", "score_raw", "hit_id", "annotator", "annotation_id", "created_at")


def keys(cand: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The idempotency key and the group key (:mod:`core.store.validation`) of each row of ``cand`` as text.

    Source key: ``'a' SEP annotation_id SEP item_id`` with an annotation id, else ``'h' SEP hit_id SEP item_id SEP
    annotator``, a missing part (None) as empty text. Group key (the HIT submission): ``'a' SEP annotation_id``
    with an annotation id, else ``'h' SEP hit_id SEP annotator`` with a HIT, else empty text. Made as the lists
    SQLite is given, one formatted string per row (and a group key once per submission, validation's ``group``
    code, when ``cand`` has that column): the ingest target of ``bench/bench_scale.py`` (docs/studies/code-notes.md)."""
    from easl_toolkit.core.store.cells import SEP as S

    ann, hit, who = cand["annotation_id"].tolist(), cand["hit_id"].tolist(), cand["annotator"].tolist()
    source = source_keys(cand)
    at, inverse = range(len(cand)), None
    if "group" in cand.columns:
        _, first, inverse = np.unique(cand["group"].to_numpy(dtype=np.int64), return_index=True, return_inverse=True)
        at = first.tolist()
    texts = [
        f"a{S}{ann[k]}" if ann[k] is not None else f"h{S}{hit[k]}{S}{who[k] or ''}" if hit[k] is not None else ""
        for k in at
    ]
    group = texts if inverse is None else np.asarray(texts, dtype=object)[inverse.reshape(-1)].tolist()
    return source, group


def source_keys(cand: pd.DataFrame) -> list[str]:
    """The idempotency key of each row of ``cand`` as text (:func:`keys`)."""
    from easl_toolkit.core.store.cells import SEP as S

    ann, hit = cand["annotation_id"].tolist(), cand["hit_id"].tolist()
    item, who = cand["item_id"].tolist(), cand["annotator"].tolist()
    return [
        f"a{S}{a}{S}{i}" if a is not None else f"h{S}{h or ''}{S}{i}{S}{w or ''}"
        for a, h, i, w in zip(ann, hit, item, who)
    ]


@dataclass
class LogRows:
    """The rows of a chunk to append to the log, made ready outside the write transaction (in the thread of
    :class:`core.store.ahead.ReadAhead`): the valid rows that do not repeat an earlier row of the batch (``cand``),
    the log's columns bound for them (``names``) with their parameters (``columns``, the source keys first),
    whether their keys are to be looked up in the live index (``look_up``), and the HITs they name as one JSON
    array when every row names one and none an annotation id (``hits_json``, else empty: :func:`live_matches`)."""

    cand: pd.DataFrame
    names: list[str]
    columns: list[list[Any]]
    look_up: bool
    hits_json: str


def log_rows(valid: pd.DataFrame, *, look_up: bool = True) -> LogRows:
    """:class:`LogRows` of a validated batch's ``valid`` rows. Only the columns given by the input are bound
    (each bound value costs), with the keys (:func:`keys`) and ``score01`` (validation's ``clip((score_raw -
    score_min) / span, 0, 1)``). ``look_up=False``: the keys are not to be looked up."""
    import pandas as pd

    from easl_toolkit.core.store.cells import present

    cand = valid[~valid["repeat"].to_numpy()].reset_index(drop=True)
    source, group = keys(cand)
    names = ["source_key", "group_key", "score01"]
    columns = [source, group, cand["score01"].to_numpy(dtype=np.float64).tolist()]
    for name in GIVEN_COLUMNS:
        col = cand[name].to_numpy()
        if col.dtype == object and not present(col).any():
            continue  # all missing: NULL
        names.append(name)
        columns.append(col.tolist())
    hit, annotation = cand["hit_id"].to_numpy(), cand["annotation_id"].to_numpy()
    by_hit = look_up and bool(present(hit).all()) and not present(annotation).any()
    return LogRows(
        cand, names, columns, look_up and bool(source), json.dumps(pd.unique(hit).tolist()) if by_hit else ""
    )


def live_matches(conn: sqlite3.Connection, rows: LogRows) -> list[tuple[Any, ...]]:
    """The live observations with the source keys of ``rows``: ``(position in rows.cand, score_raw, score01,
    item_idx, hit_id, seq)`` each, looked up in key order.

    A key without an annotation id holds its row's HIT (:func:`keys`), so rows that all name a HIT and no
    annotation id can meet a live key only in a HIT with live rows: when none of their HITs has any (the HITs of a
    new iteration), one lookup per HIT instead of one per row says so."""
    if (
        rows.hits_json
        and not conn.execute(
            "SELECT EXISTS (SELECT 1 FROM live WHERE hit_id IN (SELECT value FROM json_each(?)))", (rows.hits_json,)
        ).fetchone()[0]
    ):
        return []
    return conn.execute(
        "SELECT j.key, l.score_raw, l.score01, l.item_idx, l.hit_id, l.seq FROM (SELECT key, value FROM "
        "json_each(?) ORDER BY value) j JOIN live l ON l.source_key = j.value",
        (json.dumps(rows.columns[0]),),
    ).fetchall()


def sql_text(value: str) -> str:
    """``value`` as an SQL string literal (quotes doubled). Raises ValueError for a NUL character, which SQL text
    cannot hold."""
    if "\x00" in value:
        raise ValueError(f"{value!r} contains a NUL character")
    return "'" + value.replace("'", "''") + "'"


def append_log(
    conn: sqlite3.Connection, rows: LogRows, keep: NDArray[Any] | None, seq0: int, stamp: str, source: str
) -> int:
    """Append the score rows of ``rows`` (those where ``keep`` is True; all when None) to the log at positions
    ``seq0``, ``seq0 + 1``, ...; a row without ``created_at`` gets ``stamp``, every row ``source``. Returns the
    number appended (:func:`core.store.db.insert_rows`: many rows per statement)."""
    columns = rows.columns
    if keep is not None:
        at = np.flatnonzero(keep).tolist()
        if not at:
            return 0
        pick = operator.itemgetter(*at)
        columns = [list(pick(c)) if len(at) > 1 else [c[at[0]]] for c in columns]
    values = {name: "?" for name in rows.names}
    values["created_at"] = f"COALESCE(?, {sql_text(stamp)})" if "created_at" in values else sql_text(stamp)
    values["kind"], values["source"] = "'score'", sql_text(source)
    n = len(columns[0])
    insert_rows(
        conn,
        f"INSERT INTO observations(seq, {', '.join(values)}) VALUES ",
        f"(?, {', '.join(values.values())})",
        [range(seq0, seq0 + n), *columns],
    )
    return n


def copy_to_live(conn: sqlite3.Connection, seq0: int, *, superseded: bool) -> None:
    """Make the log's rows from ``seq0`` on the live observations of their keys (after ``superseded`` ones, the
    keys' earlier live rows are removed first). Plain columns are copied, which holds no transient memory growing with
    the live index (measurements: docs/studies/code-notes.md)."""
    if superseded:
        conn.execute(
            "DELETE FROM live WHERE source_key IN (SELECT source_key FROM observations WHERE seq >= ?)", (seq0,)
        )
    # OR FAIL (valid rows never fail): a statement that may ABORT half-way keeps a statement journal of every page
    # it changes (in memory: temp_store), a gigabyte per chunk once the live index is large
    conn.execute(
        f"INSERT OR FAIL INTO live({LIVE_COLUMNS}) SELECT {LIVE_COLUMNS} FROM observations WHERE seq >= ? "
        "ORDER BY source_key",
        (seq0,),
    )
