"""What a model reads of its project beyond the log (``core.models.base.ProjectInputs``): the numbers the items
carry for the model (an evaluation campaign's system scores, table ``covariates``) and the designs recorded with
the HITs of each iteration (table ``designs``), and the functions that write them.

``covariates(position, name, data)``: one float64 array per column (``name`` the items file's column), position =
the column's order, item ``idx`` = the array index. Written once by ``easl init``; never shown to annotators (the
items' ``data`` does not hold them).

``designs(iteration, name, data)``: the arrays a model drew an iteration's HITs with (an evaluation campaign: every
response's inclusion probability of its first and second score in that iteration, and their unions over the
iterations so far), item ``idx`` = the array index; written in the transaction that records the iteration's HITs,
so the estimates that weight by them survive a restart and are reproduced by ``easl verify``. An array per
iteration rather than a row per (iteration, item): one write per array, whatever the number of responses.

Both tables are new in schema version 4; a file without them (read as it is) has neither covariates nor designs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.store.db import Database


def save_covariates(conn: sqlite3.Connection, names: Sequence[str], values: NDArray[Any]) -> None:
    """Write the (n_items, K) ``values`` of the columns ``names`` (once, by ``easl init``)."""
    rows = [(k, name, np.ascontiguousarray(values[:, k], dtype=np.float64).tobytes()) for k, name in enumerate(names)]
    conn.executemany("INSERT INTO covariates(position, name, data) VALUES (?, ?, ?)", rows)


def save_design(conn: sqlite3.Connection, iteration: int, arrays: Mapping[str, NDArray[Any]]) -> None:
    """Record the design ``arrays`` of ``iteration`` (float64 per item) in the caller's transaction."""
    rows = [(iteration, name, np.ascontiguousarray(a, dtype=np.float64).tobytes()) for name, a in arrays.items()]
    conn.executemany("INSERT OR REPLACE INTO designs(iteration, name, data) VALUES (?, ?, ?)", rows)


def read_covariates(conn: sqlite3.Connection, n_items: int) -> tuple[list[str], NDArray[Any]]:
    """``(names, values)``: the columns and the (n_items, K) array of :func:`save_covariates` (K = 0: none)."""
    try:
        rows = conn.execute("SELECT name, data FROM covariates ORDER BY position").fetchall()
    except sqlite3.OperationalError:  # a file of schema version 3 or older, read as it is
        rows = []
    values = np.empty((n_items, len(rows)), dtype=np.float64)
    for k, (_, data) in enumerate(rows):
        values[:, k] = np.frombuffer(data, dtype=np.float64)
    return [str(r[0]) for r in rows], values


def read_design(conn: sqlite3.Connection, iteration: int | None = None) -> dict[str, NDArray[Any]]:
    """The design arrays of ``iteration`` (None: the latest iteration that has one); empty when there is none."""
    try:
        if iteration is None:
            row = conn.execute("SELECT MAX(iteration) FROM designs").fetchone()
            if row is None or row[0] is None:
                return {}
            iteration = int(row[0])
        rows = conn.execute("SELECT name, data FROM designs WHERE iteration = ?", (iteration,)).fetchall()
    except sqlite3.OperationalError:  # a file of schema version 3 or older, read as it is
        return {}
    return {str(name): np.frombuffer(data, dtype=np.float64).copy() for name, data in rows}


class StoreInputs:
    """The inputs of an open project (``core.models.base.ProjectInputs``), read on the project's connection (so
    inside a transaction they include its writes); the covariates, which never change, are read once."""

    def __init__(self, db: Database, n_items: int) -> None:
        self._db = db
        self._n_items = n_items
        self._covariates: NDArray[Any] | None = None
        self.names: list[str] = []

    def covariates(self) -> NDArray[Any]:
        """(n_items, K) float64 (:func:`read_covariates`)."""
        if self._covariates is None:
            self.names, self._covariates = read_covariates(self._db.conn, self._n_items)
        return self._covariates

    def design(self) -> dict[str, NDArray[Any]]:
        """The latest iteration's design arrays (:func:`read_design`)."""
        return read_design(self._db.conn)


class CovariateColumns:
    """The system-score columns of an items file, taken out of its chunks as ``easl init`` reads them (so they never
    reach the items' ``data``, which annotators see) and checked: every response has a finite number in each.

    Use :meth:`chunks` on the chunks of the items file, then :attr:`values` (n_items, K) once they are read.
    """

    def __init__(self, names: Sequence[str], id_column: str, text_column: str) -> None:
        from easl_toolkit.core.errors import InputError

        for name in names:
            for role, column in (("id", id_column), ("text", text_column)):
                if name == column:
                    raise InputError(
                        f"items: column {name!r} is both a system column and the {role} column; a system's scores "
                        f"need a column of their own.",
                        field=name,
                    )
        self.names = list(names)
        self._parts: list[NDArray[Any]] = []

    @property
    def values(self) -> NDArray[Any]:
        """(n_items, K) float64, the system scores of every response read so far."""
        if not self._parts:
            return np.empty((0, len(self.names)))
        return np.concatenate(self._parts, axis=0)

    def chunks(self, chunks: Any) -> Any:
        """The chunks without the system columns, their values checked and kept (:meth:`take`)."""
        for table in chunks:
            yield self.take(table)

    def take(self, table: Any) -> Any:
        """One chunk (``core.tables.Table``) without the system columns; raises one located
        :class:`core.errors.InputError` for a missing column, a missing, non-numeric or infinite score."""
        import dataclasses

        from easl_toolkit.core.errors import InputError
        from easl_toolkit.core.store.items import header_name

        columns = [str(c) for c in table.frame.columns]
        out = np.empty((len(table.frame), len(self.names)))
        for k, name in enumerate(self.names):
            if name not in columns and len(table.frame) and table.unit == "line" and table.path.endswith(".jsonl"):
                raise InputError(  # (JSON lines: a chunk whose records all lack the key)
                    f"{table.location(0)}: column {name!r}: the response has no score of this system.",
                    path=table.path,
                    line=int(table.lines[0]),
                    field=name,
                )
            if name not in columns:
                raise InputError(
                    f"{table.path}: {header_name(table)}: system column {name!r} not found (the columns are: "
                    f"{', '.join(columns)}).",
                    path=table.path,
                    field=name,
                )
            out[:, k] = _system_scores(table, name)
        self._parts.append(out)
        return dataclasses.replace(table, frame=table.frame.drop(columns=self.names))


def _system_scores(table: Any, name: str) -> NDArray[Any]:
    """The float64 scores of column ``name`` of ``table``, or one located InputError for the first bad cell."""
    import pandas as pd

    from easl_toolkit.core.errors import InputError

    raw = table.frame[name]
    as_text = raw.map(lambda v: v.strip() if isinstance(v, str) else v)
    missing = pd.isna(as_text).to_numpy() | (as_text.astype(object) == "").to_numpy()
    kind_bad = raw.map(lambda v: isinstance(v, (bool, dict, list))).to_numpy(dtype=bool)
    values: NDArray[Any] = pd.to_numeric(as_text.where(~(missing | kind_bad), None), errors="coerce").to_numpy(
        dtype=np.float64
    )
    problems = [
        (missing, "the response has no score of this system"),
        (kind_bad | (np.isnan(values) & ~missing), "the system score is not a number"),
        (np.isinf(values), "the system score is not finite"),
    ]
    first = (
        min((int(np.flatnonzero(bad)[0]), reason) for bad, reason in problems if bad.any())
        if any(bad.any() for bad, _ in problems)
        else None
    )
    if first is not None:
        i, reason = first
        shown = "" if missing[i] else f" ({raw.iloc[i]!r})"
        raise InputError(
            f"{table.location(i)}: column {name!r}: {reason}{shown}.",
            path=table.path,
            line=int(table.lines[i]),
            field=name,
        )
    return values
