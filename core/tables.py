"""Reading and writing the tables users hand us or get from us: items, annotations, exports.

Formats are chosen by file extension:

============  =========================  ===========================================================
extension     read                       write
============  =========================  ===========================================================
``.csv``      RFC 4180 CSV, UTF-8        RFC 4180 CSV (pyarrow), UTF-8, quotes only where needed [1]_
``.tsv``      tab-separated, no quoting  tab-separated [1]_
``.jsonl``    one JSON object per line   one JSON object per line, floats exact, NaN as ``null``
``.parquet``  Apache Parquet (pyarrow)   Parquet (pyarrow)
============  =========================  ===========================================================

.. [1] Text cells that a spreadsheet would execute as a formula (beginning with ``=``, ``+``, ``-``, ``@``, tab or
   carriage return, and not a plain number) are written with a leading single quote unless ``raw_cells``
   (:func:`core.outputs.neutralise_cells`).

Every record read keeps its source line (``Table.locations``: ``"file.csv:12"``, ``"file.parquet:row 12"``) for
messages; CSV and TSV cells stay strings (ids such as ``"007"`` survive). Writes are atomic (:func:`atomic_path`).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv

from core.errors import InputError
from core.outputs import atomic_outputs, neutralise_cells, neutralise_frame
from core.table_parsing import (
    Table as Table,
)
from core.table_parsing import (
    _iter_jsonl,
    _iter_parquet,
    _iter_plain_delimited,
    _locate_bad_utf8,
    _open_binary,
    _open_parquet,
    check_regular_file,
)

READ_FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
WRITE_FORMATS = {ext: fmt for ext, fmt in READ_FORMATS.items() if ext != ".tab"}


def _format(path: str | os.PathLike[str], formats: dict[str, str], what: str) -> str:
    ext = Path(path).suffix.lower()
    if ext not in formats:
        known = ", ".join(sorted(formats))
        raise InputError(
            f"{path}: cannot tell the {what} format from the extension {ext or '(none)'!r}; use one of {known}."
        )
    return formats[ext]


def read_format(path: str | os.PathLike[str]) -> str:
    """Return the reader format for ``path`` from its extension, or raise InputError naming the known ones."""
    return _format(path, READ_FORMATS, "file")


def write_format(path: str | os.PathLike[str]) -> str:
    """Return the writer format for ``path`` from its extension, or raise InputError naming the known ones."""
    return _format(path, WRITE_FORMATS, "output")


def check_input(path: str | os.PathLike[str]) -> None:
    """Check an input file before any work: a known extension (:func:`read_format`) and a regular file that can be
    opened (not a directory, device, FIFO or socket, even through a symbolic link: such inputs may never end); else
    raise InputError, one sentence naming the file."""
    read_format(path)
    check_regular_file(path)


def read_table(path: str | os.PathLike[str]) -> Table:
    """Read a CSV, TSV, JSONL or Parquet file (by extension) into a ``Table`` with source lines (a text file is
    :func:`iter_table` in one chunk).

    Parameters
    ----------
    path : str or PathLike
        The file. Text formats must be UTF-8.

    Returns
    -------
    Table

    Raises
    ------
    InputError
        Missing file, unknown extension, empty file, non-UTF-8 bytes (with line and column), malformed CSV/JSON
        (with line), ragged CSV rows (with line), duplicate or empty header names.
    """
    path = os.fspath(path)
    fmt = read_format(path)
    if fmt == "parquet":
        _open_parquet(path)
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several types for a corrupt file
            raise InputError(f"{path}: cannot read the Parquet file ({exc}).") from None
        frame = frame.reset_index(drop=True)
        return Table(frame=frame, lines=np.arange(1, len(frame) + 1, dtype=np.int64), path=path, unit="row")
    (table,) = iter_table(path, chunk_rows=sys.maxsize)  # one chunk: the whole file
    return table


CHUNK_ROWS = 250_000  # records per chunk of :func:`iter_table`: a few hundred MB at most, whatever the file size


def iter_table(path: str | os.PathLike[str], chunk_rows: int | None = None) -> Iterator[Table]:
    """Read a CSV, TSV, JSONL or Parquet file in chunks of at most ``chunk_rows`` records, each a ``Table`` with
    the source lines of its records, so that memory stays flat whatever the file size (``easl ingest``).

    The checks and messages are those of :func:`read_table` (strict UTF-8, RFC 4180, one JSON object per line,
    the header); an error in a later chunk is raised when that chunk is read. A file with a header and no
    records yields one empty ``Table``.
    """
    path = os.fspath(path)
    chunk_rows = chunk_rows or CHUNK_ROWS
    fmt = read_format(path)
    if fmt == "parquet":
        yield from _iter_parquet(path, chunk_rows)
        return
    if fmt != "jsonl":
        yield from _iter_plain_delimited(path, "," if fmt == "csv" else "\t", chunk_rows)
        return
    with _open_binary(path) as raw, io.TextIOWrapper(raw, encoding="utf-8-sig", errors="strict", newline="") as fh:
        try:
            yield from _iter_jsonl(fh, path, chunk_rows)
        except UnicodeDecodeError:
            _locate_bad_utf8(path)
            raise


def _parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Object columns mixing types (e.g. ints and strings from JSONL items) are written as strings (lists and
    dicts as JSON text), so that Arrow-based writers accept them."""
    out = frame
    for col in frame.columns:
        if frame[col].dtype == object:
            kinds = {type(v) for v in frame[col].dropna().tolist()}
            if len(kinds) > 1 or (kinds and not kinds <= {str, int, float, bool}):
                out = out.copy() if out is frame else out
                out[col] = out[col].map(
                    lambda v: (
                        None
                        if v is None or (isinstance(v, float) and np.isnan(v))
                        else (v if isinstance(v, str) else json.dumps(v))
                    )
                )
    return out


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[str]:
    """:func:`core.outputs.atomic_outputs` for one file: yield a temporary name in ``path``'s directory, renamed over
    ``path`` on success, removed on any error (InputError when the directory or the write fails)."""
    with atomic_outputs([path]) as (tmp,):
        yield tmp


def _write_to(frame: pd.DataFrame, tmp: str, fmt: str, raw_cells: bool = False) -> None:
    """``frame`` into the file ``tmp`` as ``fmt`` (:func:`write_table`)."""
    if fmt == "csv":  # pyarrow's writer, for the export target (measurements: docs/studies/code-notes.md)
        table = pa.Table.from_pandas(_parquet_safe(frame), preserve_index=False)
        if not raw_cells:
            table = neutralise_cells(table)
        pa_csv.write_csv(table, tmp, write_options=pa_csv.WriteOptions(quoting_style="needed"))
    elif fmt == "tsv":
        (frame if raw_cells else neutralise_frame(_parquet_safe(frame))).to_csv(tmp, index=False, sep="\t")
    elif fmt == "jsonl":
        with open(tmp, "wb") as fh:
            fh.write(jsonl_bytes(frame))
    else:
        _parquet_safe(frame).to_parquet(tmp, index=False)


#: what ``json.dumps`` writes for the characters a JSON string escapes by name (the other controls: ``\\u00XX``)
_JSON_ESCAPES = (
    ("\\", "\\\\"),
    ('"', '\\"'),
    ("\n", "\\n"),
    ("\r", "\\r"),
    ("\t", "\\t"),
    ("\b", "\\b"),
    ("\f", "\\f"),
)


def _text(value: str) -> pa.Scalar:
    """``value`` as an Arrow large-string scalar (the type every JSON text below is built in)."""
    return pa.scalar(value, pa.large_string())


def _json_cells(values: pd.Series) -> pa.Array:
    """The JSON text of each cell of a column, as ``json.dumps(v, ensure_ascii=False)`` writes it: strings quoted
    and escaped, numbers in the shortest form that reads back as the same float64 (an integral float keeps its
    ``.0``), booleans, ``null`` for a missing value, NaN or an infinity; other objects (dicts, lists, mixed
    columns) one ``json.dumps`` each."""
    import pyarrow.compute as pc

    kinds = {type(v) for v in values.dropna().tolist()} if values.dtype == object else set()
    if values.dtype == object and not kinds <= {str}:
        cells = [
            None if v is None or v != v else json.dumps(v, ensure_ascii=False, separators=(",", ":"), default=str)
            for v in values
        ]
        return pc.fill_null(pa.array(cells, type=pa.large_string()), "null")
    array = pa.array(values, from_pandas=True)
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type) or pa.types.is_null(array.type):
        text = array.cast(pa.large_string())
        other = pc.match_substring_regex(text, "[\\x{0}-\\x{7}\\x{b}\\x{e}-\\x{1f}]")
        for char, escaped in _JSON_ESCAPES:
            text = pc.replace_substring(text, char, escaped)
        if pc.any(other).as_py():
            dumped = [json.dumps(v, ensure_ascii=False)[1:-1] for v in array.filter(other).to_pylist()]
            text = pc.replace_with_mask(text, pc.fill_null(other, False), pa.array(dumped, type=pa.large_string()))
        text = pc.binary_join_element_wise(_text('"'), text, _text('"'), _text(""))
    elif pa.types.is_floating(array.type):
        text = pc.cast(array, pa.large_string())
        integral = pc.match_substring_regex(text, "^-?[0-9]+$")
        text = pc.if_else(integral, pc.binary_join_element_wise(text, _text(".0"), _text("")), text)
        text = pc.if_else(pc.is_finite(array), text, pa.scalar(None, pa.large_string()))
    elif pa.types.is_boolean(array.type):
        text = pc.if_else(array, _text("true"), _text("false"))
    elif pa.types.is_integer(array.type):
        text = pc.cast(array, pa.large_string())
    else:  # dates, times: their ISO text
        return _json_cells(pd.Series(values.astype(object).map(lambda v: None if pd.isna(v) else str(v))))
    return pc.fill_null(text, "null")


def jsonl_bytes(frame: pd.DataFrame) -> bytes:
    """``frame`` as JSON lines, one object per row, keys in column order: the bytes of ``json.dumps(record,
    ensure_ascii=False, separators=(",", ":"))`` per row (:func:`_json_cells`), built column by column with Arrow's
    string functions. Floats are written exactly (pandas' JSON writer keeps 15 decimal places)."""
    import pyarrow.compute as pc

    if not len(frame):
        return b""
    parts: list[Any] = []
    for k, name in enumerate(frame.columns):
        parts += [_text(("{" if k == 0 else ",") + json.dumps(str(name), ensure_ascii=False) + ":")]
        parts += [_json_cells(frame.iloc[:, k])]
    lines = pc.binary_join_element_wise(*parts, _text("}\n"), _text(""))
    if not isinstance(lines, pa.Array):  # (no column: every row is {})
        return b"{}\n" * len(frame)
    ends = np.frombuffer(lines.buffers()[1], dtype=np.int64)[[lines.offset, lines.offset + len(lines)]]
    out: bytes = lines.buffers()[2].to_pybytes()[int(ends[0]) : int(ends[1])]
    return out


def write_table_to(frame: pd.DataFrame, tmp: str, path: str | os.PathLike[str], *, raw_cells: bool = False) -> None:
    """Write ``frame`` into the file ``tmp`` in the format of ``path``'s extension, as :func:`write_table` does, for
    callers that rename it into place themselves (e.g. after a commit); a write error is InputError naming ``path``."""
    try:
        _write_to(frame, tmp, write_format(path), raw_cells)
    except OSError as exc:
        raise InputError(
            f"{path}: cannot write the file ({exc.strerror or exc}); nothing was written.", path=os.fspath(path)
        ) from None


def write_table(frame: pd.DataFrame, path: str | os.PathLike[str], *, raw_cells: bool = False) -> None:
    """Write ``frame`` to ``path`` as CSV, TSV, JSONL or Parquet (by extension), atomically (:func:`atomic_path`):
    missing values as empty CSV cells, ``null`` in JSONL, nulls in Parquet; float64 round-trips exactly; CSV and TSV
    cells a spreadsheet would execute get a leading quote unless ``raw_cells`` (module docstring).

    Raises
    ------
    InputError
        Unknown extension, or the directory cannot be written.
    """
    write_tables([(frame, path)], raw_cells=raw_cells)


def write_tables(outputs: list[tuple[pd.DataFrame, str | os.PathLike[str]]], *, raw_cells: bool = False) -> None:
    """Write several tables (:func:`write_table` each) all or none: every file is written under a temporary name
    and renamed into place only when all are complete (:func:`core.outputs.atomic_outputs`)."""
    formats = [write_format(path) for _, path in outputs]
    with atomic_outputs([path for _, path in outputs]) as temps:
        for (frame, _), tmp, fmt in zip(outputs, temps, formats):
            _write_to(frame, tmp, fmt, raw_cells)


def write_jsonl_records(records: list[dict[str, Any]], path: str | os.PathLike[str]) -> None:
    """Write JSON objects one per line (``json.dumps``, UTF-8, exact floats), atomically (:func:`atomic_path`)."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
