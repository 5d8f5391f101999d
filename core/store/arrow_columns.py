"""Columns of the project file as Arrow arrays, and the one CSV writer of the files built from them.

The CSV files of ``easl next --output hits.csv`` and ``easl export --output estimates.csv`` are written by Arrow's
CSV writer with the options of ``core.tables.write_table`` (quoting style "needed"), from an Arrow table of the
same column types as ``pyarrow.Table.from_pandas`` gives for the DataFrame that function would be handed
(strings, int64, float64 with NaN as null), so the bytes are the same; but the table is built without pandas:
``pyarrow.array`` imports pandas (about half a second), so arrays are made from numpy buffers here. A large table
is formatted in slices by threads, and when its numbers repeat (the estimates of items scored alike) the rows are
joined from texts with each distinct row of numbers formatted once (:func:`write_csv`): the bytes are still those
of Arrow's writer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from core.outputs import neutralise_cells

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
#: :func:`write_csv` formats the numbers of a table once per distinct row of them when there are at most a quarter
#: as many distinct rows as rows (e.g. estimates of items scored alike), else by Arrow's writer
DISTINCT_SHARE = 4


def write_csv(table: pa.Table, tmp: str | os.PathLike[str], *, raw_cells: bool = False) -> None:
    """Write ``table`` to the file ``tmp`` as CSV: the bytes of Arrow's writer with the options of ``core.tables``
    (quoting style "needed": every string quoted, its quotes doubled; numbers as Arrow casts them to text; a null
    as nothing), whichever way they are made.

    A table of more than :data:`CSV_SLICE_ROWS` rows is formatted one slice at a time, each into a buffer of its
    own, by threads (Arrow's compute functions and CSV writer release the GIL), and the buffers are written in
    order after the header: each row's text depends on its values alone. The slices are made by Arrow's writer, or,
    when the table's numbers repeat (:func:`_row_joiner`), by joining the rows' texts with numbers formatted once
    per distinct row of them: most of the writer's time goes into formatting numbers.

    Text cells that a spreadsheet would execute are neutralised first unless ``raw_cells``
    (:func:`core.outputs.neutralise_cells`)."""
    import pyarrow.csv as pa_csv

    if not raw_cells:
        table = neutralise_cells(table)

    options = pa_csv.WriteOptions(quoting_style="needed")
    slice_rows = CSV_SLICE_ROWS
    if table.num_rows <= slice_rows:
        pa_csv.write_csv(table, tmp, write_options=options)
        return
    import pyarrow as pa

    header = pa.BufferOutputStream()
    pa_csv.write_csv(table.slice(0, 0), header, write_options=options)
    formatted = _row_joiner(table)
    if formatted is None:
        rows_only = pa_csv.WriteOptions(quoting_style="needed", include_header=False)

        def formatted(start: int, length: int) -> pa.Buffer:
            sink = pa.BufferOutputStream()
            pa_csv.write_csv(table.slice(start, length), sink, write_options=rows_only)
            return sink.getvalue()

    _write_slices(tmp, header.getvalue(), table.num_rows, slice_rows, formatted)


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


def _text(value: str) -> pa.Scalar:
    """``value`` as an Arrow large-string scalar (``pyarrow.scalar`` would import pandas)."""
    array = joined_strings(value.encode(), 1)
    assert array is not None  # one string without a NUL byte
    return array[0]


def _row_joiner(table: pa.Table) -> Callable[[int, int], pa.Buffer] | None:
    """``formatted(start, length)``: the CSV text of the rows ``start, ..., start + length - 1`` of ``table``
    without the header, the bytes of Arrow's writer; None unless every column is a string column without nulls or
    a number column, and the number columns of a run of them (columns side by side) hold at most
    ``1 / DISTINCT_SHARE`` as many distinct rows as the table.

    A row is joined from its pieces: the quoted strings (quotes doubled: Arrow's quoting) and, for each run of
    number columns, the text of its values, separators and the quotes around, made once per distinct row of the run
    (its values dictionary-encoded by Arrow, a row's key mixed from their codes; the text of each value is Arrow's
    cast to a string, which is what its writer writes) and taken per row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    string, number = [pa.types.is_string, pa.types.is_large_string], [pa.types.is_integer, pa.types.is_floating]
    kinds = []
    for column in table.columns:
        if any(is_type(column.type) for is_type in string) and column.null_count == 0:
            kinds.append("s")
        elif any(is_type(column.type) for is_type in number):
            kinds.append("n")
        else:
            return None
    # the row as literal texts between columns: [text, piece, text, piece, ..., text]; a piece is a string column
    # (its index) or a run of number columns (their indices)
    layout: list[Any] = [""]
    at = 0
    while at < len(kinds):
        if at:
            layout[-1] += ","
        if kinds[at] == "s":
            layout[-1] += '"'
            layout += [at, '"']
            at += 1
        else:
            end = at
            while end < len(kinds) and kinds[end] == "n":
                end += 1
            layout += [list(range(at, end)), ""]
            at = end
    layout[-1] += "\n"
    # per piece of the row: a scalar text, a string column, or (texts, codes) of a run; the texts beside a run are
    # made part of its texts
    pieces: list[Any] = []
    for k, part in enumerate(layout):
        if isinstance(part, str):
            beside_run = isinstance(layout[k - 1], list) or (k + 1 < len(layout) and isinstance(layout[k + 1], list))
            if part and not beside_run:
                pieces.append(_text(part))
        elif isinstance(part, int):
            pieces.append(_quoted(table.column(part)))
        else:  # a run of numbers, with the texts before and after it
            run = _number_run([table.column(c) for c in part], n, layout[k - 1], layout[k + 1])
            if run is None:
                return None
            pieces.append(run)
    empty = _text("")

    def formatted(start: int, length: int) -> pa.Buffer:
        args = [
            piece[0].take(piece[1].slice(start, length))
            if isinstance(piece, tuple)
            else piece.slice(start, length)
            if isinstance(piece, pa.Array)
            else piece
            for piece in pieces
        ]
        rows = pc.binary_join_element_wise(*args, empty)
        offsets = np.frombuffer(rows.buffers()[1], dtype=np.int64)
        return rows.buffers()[2].slice(
            int(offsets[rows.offset]), int(offsets[rows.offset + len(rows)] - offsets[rows.offset])
        )

    return formatted


def _quoted(column: pa.ChunkedArray) -> pa.Array:
    """A string column as a large-string array with its quotes doubled (Arrow's quoting; the quotes around are the
    row's literal texts)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = column.combine_chunks().cast(pa.large_string())
    data = array.buffers()[2]
    if data is not None and np.any(np.frombuffer(data, dtype=np.uint8) == 0x22):
        array = pc.replace_substring(array, '"', '""')
    return array


def _number_run(columns: list[pa.ChunkedArray], n: int, before: str, after: str) -> tuple[pa.Array, pa.Array] | None:
    """``(texts, codes)`` of number columns side by side: ``texts[codes[i]]`` is the text of row ``i`` of them, with
    ``before`` and ``after`` around (a null as nothing); None when they hold more than ``n / DISTINCT_SHARE``
    distinct rows."""
    import pyarrow.compute as pc

    limit = n // DISTINCT_SHARE
    values, codes = [], []
    key: NDArray[np.int64] | None = None
    size = 1
    for column in columns:
        encoded = pc.dictionary_encode(column.combine_chunks(), null_encoding="encode")
        count = len(encoded.dictionary)
        if count > limit:
            return None
        code = _indices(encoded)
        if key is None:
            key, size = code.astype(np.int64), count
        else:
            if size * count >= 1 << 62:  # renumber the distinct keys so far: 0 .. limit
                key, size = _codes(key)
            key, size = key * count + code, size * count
        values.append(encoded.dictionary.cast("large_string"))
        codes.append(code)
    assert key is not None
    row_code, distinct = _codes(key)
    if distinct > limit:
        return None
    first = np.empty(distinct, dtype=np.int64)
    first[row_code] = np.arange(n)  # a row of each distinct key (they have the same values)
    args: list[Any] = [_text(before)] if before else []
    for k, (value, code) in enumerate(zip(values, codes)):
        if k:
            args.append(_text(","))
        args.append(value.take(integers(code[first])))
    if after:
        args.append(_text(after))
    texts = pc.binary_join_element_wise(*args, _text(""), null_handling="replace", null_replacement="")
    return texts, integers(row_code)


def _codes(key: NDArray[np.int64]) -> tuple[NDArray[np.int64], int]:
    """Each value's number among the distinct values of ``key`` (Arrow's hash encoding), and their count."""
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(integers(key))
    return _indices(encoded).astype(np.int64), len(encoded.dictionary)


def _indices(encoded: pa.DictionaryArray) -> NDArray[Any]:
    """The codes of a dictionary array without nulls, as a numpy view (``to_numpy`` would import pandas)."""
    indices = encoded.indices
    assert indices.null_count == 0
    data = np.frombuffer(indices.buffers()[1], dtype=np.dtype(f"i{indices.type.bit_width // 8}"))  # signed
    return data[indices.offset : indices.offset + len(indices)]


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
