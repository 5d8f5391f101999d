"""Columns of the project file as Arrow arrays, and the one CSV writer of the files built from them.

The CSV files of ``easl next --output hits.csv`` and ``easl export --output estimates.csv`` are written by Arrow's
CSV writer with the options of ``core.tables.write_table`` (quoting style "needed"), from an Arrow table of the
same column types as ``pyarrow.Table.from_pandas`` gives for the DataFrame that function would be handed
(strings, int64, float64 with NaN as null), so the bytes are the same; but the table is built without pandas:
``pyarrow.array`` imports pandas (about half a second), so arrays are made from numpy buffers here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import pyarrow as pa


def strings(text: str) -> pa.Array:
    """The JSON array of strings ``text`` (SQLite's ``json_group_array``) as an Arrow string array.

    Without a backslash in ``text`` no string holds an escape, so every double quote delimits one: string ``i`` is
    the bytes between quotes ``2i`` and ``2i + 1``, gathered with numpy (no Python object per string). Otherwise
    ``json.loads``."""
    import pyarrow as pa

    if "\\" not in text:
        data = np.frombuffer(text.encode(), dtype=np.uint8)
        quotes = np.flatnonzero(data == 0x22)
        n = quotes.size // 2
        starts, ends = quotes[0::2] + 1, quotes[1::2]
        mark = np.zeros(data.size, dtype=np.int8)
        mark[starts] = 1
        mark[ends] -= 1  # an empty string opens and closes at the same byte: 0
        inside = np.cumsum(mark, dtype=np.int8).view(bool)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(ends - starts, out=offsets[1:])
        chars = np.ascontiguousarray(data[inside])
        return pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(chars)])
    return pa.array(json.loads(text), type=pa.large_string())


def joined_strings(blob: bytes | None, count: int) -> pa.Array | None:
    """The ``count`` strings of ``blob``, their UTF-8 bytes joined by NUL bytes (SQLite's
    ``CAST(group_concat(x, char(0)) AS BLOB)``), as an Arrow string array; None when ``blob`` holds another number
    of NUL bytes than ``count - 1`` (a string with a NUL byte of its own: read them as JSON instead).

    String ``i`` lies between separators ``i - 1`` and ``i``; with the separators removed it starts ``i`` bytes
    earlier, so its offset is ``separator[i - 1] + 1 - i``: one pass of numpy, no Python object per string (a
    quarter of the time of :func:`strings`, and SQLite joins without escaping)."""
    import pyarrow as pa

    data = np.frombuffer(blob or b"", dtype=np.uint8)
    separator = data == 0
    at = np.flatnonzero(separator)
    if at.size != max(count - 1, 0):
        return None
    offsets = np.empty(count + 1, dtype=np.int64)
    offsets[0] = 0
    if count:
        np.subtract(at, np.arange(at.size, dtype=np.int64), out=offsets[1:count])
        offsets[count] = data.size - at.size
    chars = np.ascontiguousarray(data[~separator]) if at.size else data
    return pa.Array.from_buffers(pa.large_string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(chars)])


def fixed_strings(rows: NDArray[np.uint8]) -> pa.Array:
    """Strings of one length, given as rows of UTF-8 bytes (shape ``(n, width)``; e.g.
    ``core.store.hit_rows.hit_id_bytes``), as an Arrow string array: the offsets are multiples of the width."""
    import pyarrow as pa

    n, width = rows.shape
    offsets = np.arange(n + 1, dtype=np.int64) * width
    data = np.ascontiguousarray(rows).reshape(-1)
    return pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def integers(values: NDArray[Any]) -> pa.Array:
    """An integer numpy array as an Arrow int64 array (its buffer)."""
    import pyarrow as pa

    data = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), data.size, [None, pa.py_buffer(data)])


def floats(values: NDArray[Any]) -> pa.Array:
    """A float numpy array as an Arrow float64 array (its buffer); NaN becomes null, as in
    ``pyarrow.Table.from_pandas``."""
    import pyarrow as pa

    data = np.ascontiguousarray(values, dtype=np.float64)
    nan = np.isnan(data)
    if not nan.any():
        return pa.Array.from_buffers(pa.float64(), data.size, [None, pa.py_buffer(data)])
    valid = np.packbits(~nan, bitorder="little")
    return pa.Array.from_buffers(
        pa.float64(), data.size, [pa.py_buffer(valid), pa.py_buffer(data)], null_count=int(nan.sum())
    )


#: rows per slice of a table that :func:`write_csv` formats in threads (a few MB of CSV each)
CSV_SLICE_ROWS = 16_384


def write_csv(table: pa.Table, tmp: str | os.PathLike[str]) -> None:
    """Write ``table`` to the file ``tmp`` as CSV: Arrow's writer with the options of ``core.tables``.

    A table of more than :data:`CSV_SLICE_ROWS` rows is formatted one slice at a time, each into a buffer of its own, by
    threads (Arrow's CSV writer releases the GIL, so the slices are formatted in parallel), and the buffers are
    written in order: the header with the first slice, then rows only. Each row's text depends on its values alone
    (quoting style "needed"), so the file holds the bytes of one call of Arrow's writer for the whole table."""
    import pyarrow.csv as pa_csv

    options = pa_csv.WriteOptions(quoting_style="needed")
    slice_rows = CSV_SLICE_ROWS
    if table.num_rows <= slice_rows:
        pa_csv.write_csv(table, tmp, write_options=options)
        return
    from concurrent.futures import Future, ThreadPoolExecutor

    import pyarrow as pa

    rows_only = pa_csv.WriteOptions(quoting_style="needed", include_header=False)

    def formatted(start: int) -> pa.Buffer:
        sink = pa.BufferOutputStream()
        pa_csv.write_csv(table.slice(start, slice_rows), sink, write_options=options if start == 0 else rows_only)
        return sink.getvalue()

    workers = max(1, min(4, os.cpu_count() or 1))
    starts = iter(range(0, table.num_rows, slice_rows))
    with open(tmp, "wb") as out, ThreadPoolExecutor(max_workers=workers) as pool:
        pending: list[Future[pa.Buffer]] = [
            pool.submit(formatted, start) for _, start in zip(range(workers + 1), starts)
        ]
        while pending:  # at most workers + 1 slices formatted ahead of the file
            buffer = pending.pop(0).result()
            start = next(starts, None)
            if start is not None:
                pending.append(pool.submit(formatted, start))
            out.write(buffer)


def write_csv_tables(tables: Iterable[pa.Table], tmp: str | os.PathLike[str]) -> None:
    """Write the rows of ``tables`` (one schema, at least one table) to the file ``tmp`` as one CSV, one table at a
    time: the bytes :func:`write_csv` writes for their concatenation (one header, then the rows in order)."""
    import pyarrow.csv as pa_csv

    writer = None
    try:
        for table in tables:
            if writer is None:
                writer = pa_csv.CSVWriter(tmp, table.schema, write_options=pa_csv.WriteOptions(quoting_style="needed"))
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
