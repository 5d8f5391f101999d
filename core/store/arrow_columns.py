"""Columns of the project file as Arrow arrays, and the one CSV writer of the files built from them.

The CSV files of ``easl next`` and ``easl export`` are written by Arrow's CSV writer with the options of
``core.tables.write_table``, from an Arrow table of the column types ``pyarrow.Table.from_pandas`` would give
(strings, int64, float64 with NaN as null), so the bytes are the same. The arrays are made from numpy buffers,
since ``pyarrow.array`` imports pandas, which ``easl next`` does without (docs/studies/benchmarks.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.outputs import neutralise_cells

if TYPE_CHECKING:
    import pyarrow as pa


def strings(text: str) -> pa.Array:
    """The JSON array of strings ``text`` (SQLite's ``json_group_array``) as an Arrow string array (``json``,
    :func:`text_array`)."""
    return text_array(json.loads(text))


def text_array(values: list[str]) -> pa.Array:
    """Python strings as an Arrow string array, NUL-joined and split by :func:`joined_strings` (``pyarrow.array``
    imports pandas), or by ``pyarrow.array`` when one holds a NUL of its own."""
    array = joined_strings("\0".join(values).encode(), len(values))
    if array is None:
        import pyarrow as pa

        array = pa.array(values, type=pa.large_string())
    return array


def joined_strings(blob: bytes | None, count: int) -> pa.Array | None:
    """The ``count`` strings of ``blob``, their UTF-8 bytes joined by NUL bytes (SQLite's
    ``CAST(group_concat(x, char(0)) AS BLOB)``), as an Arrow string array; None when ``blob`` holds another number
    of NUL bytes than ``count - 1`` (a string with a NUL byte of its own: read them as JSON instead).

    String ``i`` lies between separators ``i - 1`` and ``i``; with the separators removed it starts ``i`` bytes
    earlier, so its offset is ``separator[i - 1] + 1 - i``: one pass of numpy, no Python object per string (the
    ``easl next`` target)."""
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


def write_csv(table: pa.Table, tmp: str | os.PathLike[str], *, raw_cells: bool = False) -> None:
    """Write ``table`` to the file ``tmp`` as CSV: the bytes of Arrow's writer with the options of ``core.tables``
    (quoting style "needed"); text cells that a spreadsheet would execute are neutralised first unless
    ``raw_cells`` (:func:`core.outputs.neutralise_cells`).

    A table of more than :data:`CSV_SLICE_ROWS` rows is formatted in slices by threads (Arrow's CSV writer
    releases the GIL) and written in order after the header (each row's text depends on its values alone): for the
    speed of ``easl export`` at scale (measurements: docs/studies/code-notes.md)."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    if not raw_cells:
        table = neutralise_cells(table)
    options = pa_csv.WriteOptions(quoting_style="needed")
    if table.num_rows <= CSV_SLICE_ROWS:
        pa_csv.write_csv(table, tmp, write_options=options)
        return
    header = pa.BufferOutputStream()
    pa_csv.write_csv(table.slice(0, 0), header, write_options=options)
    rows_only = pa_csv.WriteOptions(quoting_style="needed", include_header=False)

    def formatted(start: int, length: int) -> pa.Buffer:
        sink = pa.BufferOutputStream()
        pa_csv.write_csv(table.slice(start, length), sink, write_options=rows_only)
        return sink.getvalue()

    _write_slices(tmp, header.getvalue(), table.num_rows, CSV_SLICE_ROWS, formatted)


def _write_slices(
    tmp: str | os.PathLike[str],
    header: pa.Buffer,
    n_rows: int,
    slice_rows: int,
    formatted: Callable[[int, int], pa.Buffer],
) -> None:
    """Write ``header``, then ``formatted(start, slice_rows)`` of every slice in order, to the file ``tmp``; the
    slices are formatted by threads, at most ``workers + 1`` ahead of the file."""
    from concurrent.futures import Future, ThreadPoolExecutor

    workers = max(1, min(4, os.cpu_count() or 1))
    starts = iter(range(0, n_rows, slice_rows))
    with open(tmp, "wb") as out, ThreadPoolExecutor(max_workers=workers) as pool:
        out.write(header)
        pending: list[Future[pa.Buffer]] = [
            pool.submit(formatted, start, slice_rows) for _, start in zip(range(workers + 1), starts)
        ]
        while pending:
            buffer = pending.pop(0).result()
            start = next(starts, None)
            if start is not None:
                pending.append(pool.submit(formatted, start, slice_rows))
            out.write(buffer)


def text_scalar(value: str) -> pa.Scalar:
    """``value`` (without a NUL character) as an Arrow large-string scalar (``pyarrow.scalar`` would import
    pandas)."""
    array = joined_strings(value.encode(), 1)
    assert array is not None  # one string without a NUL byte
    return array[0]


def joined_bytes(array: pa.Array) -> pa.Buffer:
    """The bytes of the strings of a large-string ``array`` one after another (its data buffer, no copy)."""
    import pyarrow as pa

    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)
    start, end = int(offsets[array.offset]), int(offsets[array.offset + len(array)])
    data = array.buffers()[2]
    return data.slice(start, end - start) if data is not None else pa.py_buffer(b"")


def bits(array: pa.BooleanArray) -> NDArray[np.bool_]:
    """A boolean array without nulls as a numpy array (its bitmap unpacked; ``to_numpy`` would import pandas)."""
    packed = np.frombuffer(array.buffers()[1], dtype=np.uint8)
    unpacked = np.unpackbits(packed, count=array.offset + len(array), bitorder="little")
    return unpacked[array.offset :].view(np.bool_)


def write_csv_tables(tables: Iterable[pa.Table], tmp: str | os.PathLike[str], *, raw_cells: bool = False) -> None:
    """Write the rows of ``tables`` (one schema, at least one table) to the file ``tmp`` as one CSV, one table at a
    time: the bytes :func:`write_csv` writes for their concatenation (one header, then the rows in order; text
    cells neutralised unless ``raw_cells``)."""
    import pyarrow.csv as pa_csv

    writer = None
    try:
        for table in tables:
            if not raw_cells:
                table = neutralise_cells(table)
            if writer is None:
                writer = pa_csv.CSVWriter(tmp, table.schema, write_options=pa_csv.WriteOptions(quoting_style="needed"))
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
