"""Checking one table of items (the file given to ``easl init``, or a chunk of it): the columns, the ids and texts
of its rows, and the located messages (``file:line: column 'id': reason``) shared by the whole-table reader
(:func:`items_from_table`, :func:`read_items`: library use, ``easl demo``) and the chunked insert of
``core.store.items`` (``easl init``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from core.errors import InputError, InvalidRows

if TYPE_CHECKING:
    import pandas as pd

    from core.tables import Table

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
    from core.store.cells import checked_ids
    from core.store.validation import bad_id_kinds

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
    from core.tables import read_table

    return items_from_table(read_table(path), id_column=id_column, text_column=text_column)


def frame_chunks(items: pd.DataFrame) -> Iterator[Table]:
    """An ``item_id, text, ...`` frame given to ``Project.create`` as the one chunk of :func:`insert_items` (rows
    named ``items:row N``)."""
    from core.tables import Table

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
