"""The items of a project: :class:`Catalog`, those of an open project file, and the checks of the file given to
``easl init``, in chunks (:func:`insert_items`) or whole (:func:`~core.store.item_checks.read_items`,
re-exported here), with the same checks and located messages (:mod:`core.store.item_checks`).
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import json
import os
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from core.errors import InputError
from core.store.db import Database, insert_rows, read_columns
from core.store.item_checks import (
    ORIGINAL_ID_COLUMN,
    CheckedRows,
    check_names,
    check_rows,
    data_json,
    duplicate_message,
    empty_message,
    extra_frame,
    invalid_rows,
    missing_column,
)
from core.store.item_checks import MissingColumn as MissingColumn  # re-exported (easl init)
from core.store.item_checks import frame_chunks as frame_chunks  # re-exported (core.store.project)
from core.store.item_checks import items_from_table as items_from_table  # re-exported
from core.store.item_checks import read_items as read_items  # re-exported (core.store.read_items)

if TYPE_CHECKING:
    import pandas as pd

    from core.tables import Table

MAX_KEPT = 100_000  # problems kept in ``InvalidRows.messages`` by the chunked check (the rest are counted)
CHUNK_BYTES = 8 * 2**20  # about the text of one chunk read by ``easl init`` (:func:`chunk_rows`)


def chunk_rows(path: str | os.PathLike[str], budget: int = CHUNK_BYTES) -> int:
    """Records per chunk for reading ``path`` with about ``budget`` bytes of text per chunk: the records of the
    first MiB give the bytes per record (Parquet: the row groups' uncompressed size); at most
    ``core.tables.CHUNK_ROWS``, at least 100. Long texts thus make smaller chunks, so that a chunk's memory (its
    strings, their Python objects and the JSON of the extra columns, a few times its bytes) stays bounded."""
    from core.tables import CHUNK_ROWS, check_input, read_format

    try:
        check_input(path)  # (never open a FIFO or device here: the reader words the refusal)
        if read_format(path) == "parquet":
            import pyarrow.parquet as pq

            meta = pq.ParquetFile(path).metadata
            size = sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups))
            per_row = size / max(meta.num_rows, 1)
        else:
            with open(path, "rb") as fh:
                head = fh.read(2**20)
            per_row = len(head) / max(head.count(b"\n"), 1)
    except Exception:  # unreadable or unknown: the reader words the error
        return CHUNK_ROWS
    return int(min(CHUNK_ROWS, max(100, budget // max(per_row, 1.0))))


class _Lines:
    """The source line of every record inserted so far, compactly: per chunk its first position and either its
    first line (consecutive lines, as in a CSV without line breaks in cells) or its array of lines."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._lines: list[int | NDArray[Any]] = []

    def add(self, start: int, lines: NDArray[Any]) -> None:
        self._starts.append(start)
        consecutive = len(lines) == 0 or int(lines[-1]) - int(lines[0]) == len(lines) - 1  # lines increase
        self._lines.append(int(lines[0]) if consecutive and len(lines) else np.asarray(lines, dtype=np.int64))

    def line(self, position: int) -> int:
        k = bisect.bisect_right(self._starts, position) - 1
        entry = self._lines[k]
        offset = position - self._starts[k]
        return entry + offset if isinstance(entry, int) else int(entry[offset])


class _Problems:
    """The first ``MAX_KEPT`` messages of one kind, in line order, and the count of all."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.total = 0

    def room(self) -> int:
        return MAX_KEPT - len(self.messages)

    def add(self, messages: list[str], total: int) -> None:
        self.messages.extend(messages[: self.room()])
        self.total += total


@dataclass
class _Chunk:
    table: Table
    start: int  # position (``items.idx``) of the chunk's first record
    rows: CheckedRows
    data: list[str] | None  # JSON of the extra columns (None: no extra columns, ``{}``)


class ItemsCheck:
    """The chunk-by-chunk check of an items file (:func:`insert_items`); ``n_rows`` records so far, ``columns`` the
    extra columns (JSONL records may differ in their keys: the union, in order of first appearance)."""

    def __init__(self, id_column: str, text_column: str) -> None:
        self.id_column, self.text_column = id_column, text_column
        self.n_rows = 0
        self._all: dict[str, None] = {}  # every column seen, in order
        self._first: Table | None = None
        self._kinds, self._rows = _Problems(), _Problems()
        self._lines = _Lines()

    @property
    def columns(self) -> list[str]:
        return [c for c in self._all if c not in (self.id_column, self.text_column)]

    def check(self, table: Table) -> _Chunk:
        """Check one chunk's columns and rows; raises at once for a missing or clashing column (a JSONL chunk may
        lack the id or text key: its records get missing values, and :meth:`finish` raises if no chunk had it)."""
        from core.tables import READ_FORMATS

        self._first = self._first or table
        columns = [str(c) for c in table.frame.columns]
        self._all.update(dict.fromkeys(columns))
        missing = [c for c in (self.id_column, self.text_column) if c not in columns]
        if missing and READ_FORMATS.get(os.path.splitext(table.path)[1].lower()) != "jsonl":
            raise missing_column(table, missing[0], columns)
        check_names(table, list(self._all), self.id_column, self.text_column)
        if missing:
            table = dataclasses.replace(table, frame=table.frame.assign(**dict.fromkeys(missing)))
        rows = check_rows(table, self.id_column, self.text_column)
        table = rows.with_original(table, [str(c) for c in table.frame.columns])
        if rows.original is not None:
            self._all[ORIGINAL_ID_COLUMN] = None
        self._kinds.add(rows.kind_problems, len(rows.kind_problems))
        extra = [c for c in table.frame.columns if c not in (self.id_column, self.text_column)]
        chunk = _Chunk(table, self.n_rows, rows, data_json(extra_frame(table, extra)) if extra else None)
        self._lines.add(self.n_rows, table.lines)
        self.n_rows += len(table.frame)
        return chunk

    def record(self, chunk: _Chunk, duplicates: NDArray[Any], first_of: Callable[[str], int]) -> None:
        """Word the empty ids and the ``duplicates`` (positions in the chunk) in line order; ``first_of(id)`` is
        the position of an id's first occurrence."""
        table, ids = chunk.table, chunk.rows.ids
        bad = np.union1d(chunk.rows.empty, duplicates)
        empty = set(chunk.rows.empty.tolist())
        messages = [
            empty_message(table, i, self.id_column)
            if i in empty
            else duplicate_message(table, i, self.id_column, ids[i], self._lines.line(first_of(ids[i])))
            for i in bad[: self._rows.room()].tolist()
        ]
        self._rows.add(messages, len(bad))

    def finish(self) -> None:
        """Raise the error of the whole file, if any: a column no record has, no records, bad ids (JSON kinds
        first, as :func:`items_from_table` does), else empty and duplicate ids with their lines."""
        table = self._first
        if table is None:
            raise InputError("items: no items.", path="items")
        for name in (self.id_column, self.text_column):
            if name not in self._all:
                raise missing_column(table, name, list(self._all))
        if self.n_rows == 0:
            raise InputError(f"{table.path}: the file has a header but no items.", path=table.path)
        for problems in (self._kinds, self._rows):
            if problems.total:
                raise invalid_rows(table.path, problems.messages, problems.total)


INSERT = "INSERT OR IGNORE INTO items(idx, item_id, text, data) VALUES "


def insert_items(
    conn: sqlite3.Connection, chunks: Iterable[Table], id_column: str = "id", text_column: str = "text"
) -> ItemsCheck:
    """Check and insert the items of ``chunks`` (in file order) into the empty ``items`` table of ``conn``; record
    ``i`` of the file gets ``idx = i``. Memory holds one chunk at a time.

    Every chunk is checked as :func:`items_from_table` checks a whole table; its usable rows are inserted with
    ``INSERT OR IGNORE``, so the ``UNIQUE`` index on ``item_id`` skips a repeated id (the positions missing are the
    repeats; each one's first occurrence is looked up by id). After the last chunk the whole file's error, if any,
    is raised (:meth:`ItemsCheck.finish`); the caller then discards the file (nothing is created).

    Raises
    ------
    MissingColumn, InvalidRows, InputError
        As :func:`items_from_table` (up to ``MAX_KEPT`` messages kept, all counted); and the reader's errors.
    """
    check = ItemsCheck(id_column, text_column)

    def first_of(item_id: str) -> int:
        return int(conn.execute("SELECT idx FROM items WHERE item_id = ?", (item_id,)).fetchone()[0])

    for table in chunks:
        chunk = check.check(table)
        rows, n = chunk.rows, len(table.frame)
        positions = np.arange(n) if rows.keep is None else np.flatnonzero(rows.keep)
        ids, text, data = rows.ids, rows.text, chunk.data
        if rows.keep is not None:  # leave out the rows without a usable id (the file will be refused)
            ids, text = ids[positions], text[positions]
            data = None if data is None else np.asarray(data, dtype=object)[positions].tolist()
        before = conn.total_changes
        insert_rows(
            conn,
            INSERT,
            "(?, ?, ?, ?)",
            [(chunk.start + positions).tolist(), ids.tolist(), text.tolist(), data or itertools.repeat("{}")],
        )
        duplicates = np.zeros(0, dtype=np.int64)
        if conn.total_changes - before != len(positions):
            stored = conn.execute(
                "SELECT json_group_array(idx) FROM items WHERE idx >= ? AND idx < ?", (chunk.start, chunk.start + n)
            ).fetchone()[0]
            duplicates = np.setdiff1d(positions, np.asarray(json.loads(stored), dtype=np.int64) - chunk.start)
        if duplicates.size or rows.empty.size:
            check.record(chunk, duplicates, first_of)
    check.finish()
    return check


class Catalog:
    """The items of an open project (they never change after ``easl init``): their number, the names of the extra
    columns of the items file, the ids in index order and the whole table.

    Attributes
    ----------
    n_items : int
    columns : list of str
        The extra columns of the items file (stored as one JSON object per item).
    """

    def __init__(self, db: Database, n_items: int, columns: list[str]) -> None:
        self._db = db
        self.n_items = n_items
        self.columns = columns
        self.index: pd.Index | None = None  # the ids, once read

    def item_index(self) -> pd.Index:
        """The item ids in index order (position = the item's index in the model arrays)."""
        import pandas as pd

        if self.index is None:
            (ids,) = read_columns(self._db.conn, "SELECT item_id FROM items ORDER BY idx", ["item_id"])
            self.index = pd.Index(ids, dtype=object)
        return self.index

    def items(self) -> pd.DataFrame:
        """All items: ``item_id, text`` and the extra columns of the items file, in index order."""
        import pandas as pd

        # the JSON column is read only when the items file had extra columns (a third of the reading time)
        names = ["item_id", "text", "json(data)"] if self.columns else ["item_id", "text"]
        cols = read_columns(self._db.conn, "SELECT item_id, text, data FROM items ORDER BY idx", names)
        frame = pd.DataFrame(
            {"item_id": pd.Series(cols[0], dtype=object), "text": pd.Series(cols[1], dtype=object)}, dtype=object
        )
        if self.columns:  # the data objects come parsed, in the one JSON array of their column
            data = pd.DataFrame.from_records(cols[2], columns=self.columns)
            frame = pd.concat([frame, data], axis=1)
        return frame
