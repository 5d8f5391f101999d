"""Reading and checking the items of a project (the file given to ``easl init``)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from core.errors import InputError, InvalidRows

if TYPE_CHECKING:
    import pandas as pd

    from core.tables import Table

MAX_LISTED = 20  # problems listed in one error message (the count of the rest is given)
CHECKED = "easl.checked_items"  # ``DataFrame.attrs`` mark of a frame returned by :func:`items_from_table`


class MissingColumn(InputError):
    """The items file has no column ``field``; ``columns`` are those it has."""

    def __init__(self, message: str, *, path: str, field: str, columns: list[str]) -> None:
        super().__init__(message, path=path, field=field)
        self.columns = columns


def _as_text(values: pd.Series) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
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


def _listing(problems: list[str], what: str) -> str:
    shown = problems[:MAX_LISTED]
    more = len(problems) - len(shown)
    tail = f"\n  ... and {more} more" if more > 0 else ""
    return f"{len(problems)} {what}:\n  " + "\n  ".join(shown) + tail


def items_from_table(table: Table, id_column: str = "id", text_column: str = "text") -> pd.DataFrame:
    """Check a table of items and return it as ``item_id, text, <extra columns>`` (item ids as strings).

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

    frame = table.frame
    header = "line 1" if table.unit == "line" else "header"
    columns = [str(c) for c in frame.columns]
    for name in (id_column, text_column):
        if name not in columns:
            raise MissingColumn(
                f"{table.path}: {header}: column {name!r} not found (the columns are: {', '.join(columns)}).",
                path=table.path,
                field=name,
                columns=columns,
            )
    if id_column == text_column:
        raise InputError(
            f"{table.path}: the id column and the text column are both {id_column!r}; they must differ.",
            path=table.path,
            field=id_column,
        )
    for reserved, source in (("item_id", id_column), ("text", text_column)):
        if reserved in columns and reserved != source and reserved not in (id_column, text_column):
            raise InputError(
                f"{table.path}: {header}: column {reserved!r} would clash with the item "
                f"{'id' if reserved == 'item_id' else 'text'} taken from column {source!r}; rename it.",
                path=table.path,
                field=reserved,
            )
    if len(frame) == 0:
        raise InputError(f"{table.path}: the file has a header but no items.", path=table.path)
    from core.store.validation import bad_id_kinds

    problems: list[str] = []
    kinds = bad_id_kinds(frame[id_column])
    if kinds is not None:  # ids are strings or integers, never a JSON object, array or boolean
        for i in np.flatnonzero(kinds != None).tolist():  # noqa: E711
            problems.append(
                f"{table.location(i)}: column {id_column!r}: the item id must be a string or an "
                f"integer, not a JSON {kinds[i]}"
            )
        raise InvalidRows(
            f"{table.path}: the items cannot be used; " + _listing(problems, "bad rows"),
            messages=problems,
            path=table.path,
        )
    _, ids, missing = _as_text(frame[id_column])
    for i in np.flatnonzero(missing).tolist():
        problems.append(f"{table.location(i)}: column {id_column!r}: the item id is empty")
    present = np.flatnonzero(~missing)
    codes, uniques = pd.factorize(pd.Series(ids[present], dtype=object))
    first = np.full(len(uniques), -1, dtype=np.int64)
    # first occurrence of each id (reverse assignment keeps the earliest)
    first[codes[::-1]] = present[::-1]
    dup_pos = np.flatnonzero(first[codes] != present)
    for pos in dup_pos.tolist():
        i = int(present[pos])
        j = int(first[codes[pos]])
        problems.append(
            f"{table.location(i)}: column {id_column!r}: duplicate item id {ids[i]!r} "
            f"(first on {table.unit} {int(table.lines[j])})"
        )
    if problems:
        problems.sort(key=lambda p: _line_key(p))
        raise InvalidRows(
            f"{table.path}: the items cannot be used; " + _listing(problems, "bad rows"),
            messages=problems,
            path=table.path,
        )
    text, _, text_missing = _as_text(frame[text_column])
    text = np.where(text_missing, "", text)
    out = pd.DataFrame({"item_id": ids, "text": text.astype(object)})
    for col in frame.columns:
        if col in (id_column, text_column):
            continue
        out[str(col)] = frame[col].to_numpy()
    out.attrs[CHECKED] = (len(out), tuple(out.columns))
    return out


def _line_key(problem: str) -> int:
    head = problem.split(": ", 1)[0]
    digits = head.rsplit(":", 1)[-1].replace("row ", "")
    return int(digits) if digits.isdigit() else 0


def read_items(path: str | os.PathLike[str], id_column: str = "id", text_column: str = "text") -> pd.DataFrame:
    """Read an items file (CSV, TSV, JSONL or Parquet) into ``item_id, text, <extra columns>``.

    See :func:`core.tables.read_table` for formats and :func:`items_from_table` for the checks.
    """
    from core.tables import read_table

    return items_from_table(read_table(path), id_column=id_column, text_column=text_column)


def check_items_frame(items: pd.DataFrame) -> pd.DataFrame:
    """Check an ``item_id, text, ...`` frame given to ``Project.create`` directly (rows named ``row N``)."""
    from core.tables import Table

    if items.attrs.get(CHECKED) == (len(items), tuple(items.columns)):
        return items  # from items_from_table (read_items), unchanged in shape: checked already
    if "item_id" not in items.columns or "text" not in items.columns:
        raise InputError(
            f"items: the frame needs columns 'item_id' and 'text' (it has: {', '.join(map(str, items.columns))}).",
            path="items",
        )
    table = Table(
        frame=items.reset_index(drop=True), lines=np.arange(1, len(items) + 1, dtype=np.int64), path="items", unit="row"
    )
    return items_from_table(table, id_column="item_id", text_column="text")


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
