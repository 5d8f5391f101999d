"""The items of a project: :class:`Catalog`, those of an open project file, and the checks of the file given to
``easl init``, one table at a time: its columns, the ids and texts of its rows, and the located messages
(``file:line: column 'id': reason``) shared by the whole-table reader (:func:`items_from_table`, :func:`read_items`:
library use, ``easl demo``) and the chunked insert (:func:`insert_items`, ``easl init``).
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

from easl_toolkit.core.errors import InputError
from easl_toolkit.core.store.db import Database, insert_rows, read_columns

if TYPE_CHECKING:
    import pandas as pd

    from easl_toolkit.core.tables import Table


from collections.abc import Iterator
from typing import TYPE_CHECKING

from easl_toolkit.core.errors import InvalidRows

if TYPE_CHECKING:
    import pandas as pd

    from easl_toolkit.core.tables import Table


MAX_LISTED = 20  # problems listed in one error message (the count of the rest is given)


class MissingColumn(InputError):
    """The items file has no column ``field``; ``columns`` are those it has."""

    def __init__(self, message: str, *, path: str, field: str, columns: list[str]) -> None:
        super().__init__(message, path=path, field=field)
        self.columns = columns


def as_text(values: pd.Series) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """``(text, stripped, missing)``: object arrays of the strings (ids from JSONL numbers become their decimal
    text) and of the strings without surrounding blanks, and a mask of missing or blank cells."""
    import pandas as pd

    obj = values.to_numpy(dtype=object)
    missing = pd.isna(values).to_numpy()
    if pd.api.types.infer_dtype(values, skipna=True) == "string" and not missing.any():  # strings (CSV): as is
        text = obj
    else:
        text = np.array(
            [v if isinstance(v, str) else ("" if m else str(v)) for v, m in zip(obj.tolist(), missing)], dtype=object
        )
    stripped = np.array([t.strip() for t in text.tolist()], dtype=object)
    return text, stripped, stripped == ""


def invalid_rows(path: str, problems: list[str], total: int) -> InvalidRows:
    """The error listing the first :data:`MAX_LISTED` of ``problems`` (``total`` in all)."""
    shown = problems[:MAX_LISTED]
    more = f"\n  ... and {total - len(shown)} more" if total > len(shown) else ""
    listing = f"{total} bad rows:\n  " + "\n  ".join(shown) + more
    return InvalidRows(f"{path}: the items cannot be used; {listing}", messages=problems, path=path)


def header_name(table: Table) -> str:
    return "line 1" if table.unit == "line" else "header"


def missing_column(table: Table, name: str, columns: list[str]) -> MissingColumn:
    return MissingColumn(
        f"{table.path}: {header_name(table)}: column {name!r} not found (the columns are: {', '.join(columns)}).",
        path=table.path,
        field=name,
        columns=columns,
    )


def check_names(table: Table, columns: list[str], id_column: str, text_column: str) -> None:
    """The id and text columns must differ, and no other column may be called ``item_id`` or ``text``."""
    if id_column == text_column:
        raise InputError(
            f"{table.path}: the id column and the text column are both {id_column!r}; they must differ.",
            path=table.path,
            field=id_column,
        )
    for reserved, source in (("item_id", id_column), ("text", text_column)):
        if reserved in columns and reserved != source and reserved not in (id_column, text_column):
            raise InputError(
                f"{table.path}: {header_name(table)}: column {reserved!r} would clash with the item "
                f"{'id' if reserved == 'item_id' else 'text'} taken from column {source!r}; rename it.",
                path=table.path,
                field=reserved,
            )


#: the extra column that keeps an item id as the file gave it when that text was not in Unicode NFC (the id itself
#: is the NFC form: ``core.store.cells.checked_ids``); empty for the other items
ORIGINAL_ID_COLUMN = "item_id_original"


@dataclass
class CheckedRows:
    """The checked rows of one table: ``ids`` (stripped strings in Unicode NFC), ``text``, the messages of ids that
    are JSON objects, arrays or booleans or hold a control character, the positions of empty ids, ``keep`` (rows
    with a usable id; None: all) and ``original`` (the id as given where it was not NFC, else None; None: no such
    row)."""

    ids: NDArray[Any]
    text: NDArray[Any]
    kind_problems: list[str]
    empty: NDArray[Any]
    keep: NDArray[Any] | None
    original: NDArray[Any] | None = None

    def with_original(self, table: Table, columns: list[str]) -> Table:
        """``table`` with the column :data:`ORIGINAL_ID_COLUMN` (the ids as given) when some id was not NFC."""
        if self.original is None:
            return table
        import dataclasses

        if ORIGINAL_ID_COLUMN in columns:
            raise InputError(
                f"{table.path}: {header_name(table)}: column {ORIGINAL_ID_COLUMN!r} is taken, but it is where the "
                f"ids not in Unicode NFC are kept as given; rename it.",
                path=table.path,
                field=ORIGINAL_ID_COLUMN,
            )
        return dataclasses.replace(table, frame=table.frame.assign(**{ORIGINAL_ID_COLUMN: self.original}))


def check_rows(table: Table, id_column: str, text_column: str) -> CheckedRows:
    from easl_toolkit.core.store.cells import checked_ids
    from easl_toolkit.core.store.validation import bad_id_kinds

    frame = table.frame
    kinds = bad_id_kinds(frame[id_column])
    kind_problems: list[str] = []
    bad = np.zeros(len(frame), dtype=bool)
    if kinds is not None:  # ids are strings or integers, never a JSON object, array or boolean
        bad = kinds != None  # noqa: E711 (elementwise over an object array)
        kind_problems = [
            f"{table.location(i)}: column {id_column!r}: the item id must be a string or an integer, not a JSON "
            f"{kinds[i]}"
            for i in np.flatnonzero(bad).tolist()
        ]
    _, given, missing = as_text(frame[id_column])
    checked = checked_ids(given, printable=table.printable)
    ids, original = checked.values, None
    if checked.bad is not None:
        control = checked.bad & ~bad
        kind_problems += [
            f"{table.location(i)}: column {id_column!r}: {checked.reason(i, 'item id')}"
            for i in np.flatnonzero(control).tolist()
        ]
        bad = bad | control
    if checked.changed is not None:
        original = np.full(len(given), None, dtype=object)
        original[checked.changed] = given[checked.changed]
    text, _, text_missing = as_text(frame[text_column])
    if text_missing.any():
        text = np.where(text_missing, "", text).astype(object)
    unusable = bad | missing
    keep = ~unusable if unusable.any() else None
    return CheckedRows(ids, text, kind_problems, np.flatnonzero(missing), keep, original)


def empty_message(table: Table, i: int, id_column: str) -> str:
    return f"{table.location(i)}: column {id_column!r}: the item id is empty"


def duplicate_message(table: Table, i: int, id_column: str, item_id: str, first_line: int) -> str:
    return (
        f"{table.location(i)}: column {id_column!r}: duplicate item id {item_id!r} (first on {table.unit} {first_line})"
    )


def extra_frame(table: Table, extra: list[str]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({str(c): table.frame[c].to_numpy() for c in extra})


def items_from_table(table: Table, id_column: str = "id", text_column: str = "text") -> pd.DataFrame:
    """Check a whole table of items in memory and return it as ``item_id, text, <extra columns>`` (ids as strings).

    Raises
    ------
    MissingColumn
        A missing id or text column (naming the columns found).
    InvalidRows
        Missing ids, duplicate ids (with the lines of both occurrences). Every bad row is listed (up to
        ``MAX_LISTED``; the rest are counted).
    InputError
        No rows, the same column for ids and texts, a column that would clash with ``item_id`` or ``text``.
    """
    import pandas as pd

    columns = [str(c) for c in table.frame.columns]
    for name in (id_column, text_column):
        if name not in columns:
            raise missing_column(table, name, columns)
    check_names(table, columns, id_column, text_column)
    if len(table.frame) == 0:
        raise InputError(f"{table.path}: the file has a header but no items.", path=table.path)
    rows = check_rows(table, id_column, text_column)
    if rows.kind_problems:
        raise invalid_rows(table.path, rows.kind_problems, len(rows.kind_problems))
    problems = [(int(i), empty_message(table, int(i), id_column)) for i in rows.empty.tolist()]
    present = np.flatnonzero(rows.keep) if rows.keep is not None else np.arange(len(rows.ids))
    codes, uniques = pd.factorize(pd.Series(rows.ids[present], dtype=object))
    first = np.full(len(uniques), -1, dtype=np.int64)
    first[codes[::-1]] = present[::-1]  # first occurrence of each id (reverse assignment keeps the earliest)
    for pos in np.flatnonzero(first[codes] != present).tolist():
        i, j = int(present[pos]), int(first[codes[pos]])
        problems.append((i, duplicate_message(table, i, id_column, rows.ids[i], int(table.lines[j]))))
    if problems:
        messages = [m for _, m in sorted(problems, key=lambda p: p[0])]
        raise invalid_rows(table.path, messages, len(messages))
    out = pd.DataFrame({"item_id": rows.ids, "text": rows.text})
    table = rows.with_original(table, columns)
    extra = [c for c in table.frame.columns if c not in (id_column, text_column)]
    return pd.concat([out, extra_frame(table, extra)], axis=1) if extra else out


def read_items(path: str | os.PathLike[str], id_column: str = "id", text_column: str = "text") -> pd.DataFrame:
    """Read a whole items file (CSV, TSV, JSONL or Parquet) into ``item_id, text, <extra columns>``.

    See :func:`core.tables.read_table` for formats and :func:`items_from_table` for the checks.
    """
    from easl_toolkit.core.tables import read_table

    return items_from_table(read_table(path), id_column=id_column, text_column=text_column)


def frame_chunks(items: pd.DataFrame) -> Iterator[Table]:
    """An ``item_id, text, ...`` frame given to ``Project.create`` as the one chunk of :func:`insert_items` (rows
    named ``items:row N``)."""
    from easl_toolkit.core.tables import Table

    if "item_id" not in items.columns or "text" not in items.columns:
        raise InputError(
            f"items: the frame needs columns 'item_id' and 'text' (it has: {', '.join(map(str, items.columns))}).",
            path="items",
        )
    frame = items.reset_index(drop=True)
    yield Table(frame=frame, lines=np.arange(1, len(frame) + 1, dtype=np.int64), path="items", unit="row")


def data_json(items: pd.DataFrame) -> list[str]:
    """JSON object of each item's extra columns (everything but ``item_id`` and ``text``); NaN becomes null."""
    extra = [c for c in items.columns if c not in ("item_id", "text")]
    if not extra:
        return ["{}"] * len(items)
    sub = items[extra].reset_index(drop=True)
    text = str(sub.to_json(orient="records", lines=True, force_ascii=False, date_format="iso"))
    rows = text.splitlines()
    if len(rows) != len(items):  # a newline inside a value cannot occur in JSON text; guard anyway
        rows = [json.dumps(r, ensure_ascii=False, default=str) for r in sub.to_dict(orient="records")]
    return rows


MAX_KEPT = 100_000  # problems kept in ``InvalidRows.messages`` by the chunked check (the rest are counted)
CHUNK_BYTES = 8 * 2**20  # about the text of one chunk read by ``easl init`` (:func:`chunk_rows`)


def chunk_rows(path: str | os.PathLike[str], budget: int = CHUNK_BYTES) -> int:
    """Records per chunk for reading ``path`` with about ``budget`` bytes of text per chunk: the records of the
    first MiB give the bytes per record (Parquet: the row groups' uncompressed size); at most
    ``core.tables.CHUNK_ROWS``, at least 100. Long texts thus make smaller chunks, so that a chunk's memory (its
    strings, their Python objects and the JSON of the extra columns, a few times its bytes) stays bounded."""
    from easl_toolkit.core.tables import CHUNK_ROWS, check_input, read_format

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
        from easl_toolkit.core.tables import READ_FORMATS

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
