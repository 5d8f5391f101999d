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

Parsing: Arrow's CSV reader for plain lines, the csv module otherwise; JSONL; Parquet; whole or in chunks. Text is
strict UTF-8 (a byte-order mark is allowed); a bad byte, a malformed record, a ragged row or a bad header is one
``InputError`` naming the file, line and column.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
from numpy.typing import NDArray

from easl_toolkit.core.errors import InputError
from easl_toolkit.core.outputs import atomic_outputs, neutralise_cells, neutralise_frame


def _raise_csv_field_limit() -> int:
    """Let the csv module read fields as long as the machine can hold (its default refuses fields over 131,072
    characters, which RFC 4180 allows); ``sys.maxsize`` is halved until the C long accepts it."""
    limit = sys.maxsize
    while True:
        try:
            csv.field_size_limit(limit)
            return limit
        except OverflowError:
            limit //= 2


_raise_csv_field_limit()


@dataclass
class Table:
    """A table read from a file, with the source line (or row) of every record.

    Attributes
    ----------
    frame : pandas.DataFrame
        The records; CSV/TSV cells are strings, JSONL values keep their JSON types (object columns).
    lines : numpy.ndarray
        int64, the 1-based line where each record starts (Parquet: the 1-based row number).
    path : str
        The file name as the user gave it (used in messages).
    unit : str
        ``"line"`` for text formats, ``"row"`` for Parquet.
    unpadded : bool
        True when no cell begins or ends with whitespace, known from the text (it holds no whitespace but line
        ends): validation then has no cell to strip.
    printable : bool
        True when every cell is printable ASCII, known from the bytes (:func:`_printable`): ids then need no
        Unicode normalisation and hold no control character (``core.store.cells.checked_ids``).
    arrow : dict of pyarrow.Array, or None
        The columns of ``frame`` as Arrow's CSV reader made them (string arrays, one chunk each), when it did: the
        ingest's validation looks ids up and casts scores on them rather than converting the object columns back
        (the ingest target of ``bench/bench_scale.py``).
    """

    frame: pd.DataFrame
    lines: NDArray[Any]
    path: str
    unit: str = "line"
    unpadded: bool = False
    printable: bool = False
    arrow: dict[str, pa.Array] | None = None

    def locations(self) -> NDArray[Any]:
        """Return ``"file:line"`` (or ``"file:row N"``) for every record, as an object array."""
        prefix = f"{self.path}:" if self.unit == "line" else f"{self.path}:row "
        return np.asarray([prefix + str(n) for n in self.lines.tolist()], dtype=object)

    def location(self, i: int) -> str:
        """Return the location of record ``i`` (0-based position in ``frame``)."""
        n = int(self.lines[i])
        return f"{self.path}:{n}" if self.unit == "line" else f"{self.path}:row {n}"


#: what a file that is not a regular file is, by ``stat.S_IFMT``: such inputs never end (``/dev/zero``) or block
#: until a writer comes (a FIFO), so they are refused
_KINDS = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def _open_binary(path: str) -> io.BufferedReader:
    """Open ``path`` for reading bytes; a missing file, no permission, or anything but a regular file (a directory,
    a device such as ``/dev/zero``, a FIFO, a socket; a symbolic link is followed) is one InputError.

    The file is opened without blocking (``O_NONBLOCK``: opening a FIFO with no writer returns at once) and its kind
    is read from the open descriptor (``fstat``), so a name swapped between the check and the read cannot slip an
    endless input in."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file.", path=path) from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file.", path=path) from None
    except PermissionError:
        raise InputError(f"{path}: permission denied.", path=path) from None
    except OSError as exc:  # e.g. a socket (ENXIO), a name too long
        raise InputError(f"{path}: cannot open the file ({exc.strerror or exc}).", path=path) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
            raise InputError(
                f"{path}: is {kind}, not a regular file; give a file of records (a stream or device may never end).",
                path=path,
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return open(fd, "rb")  # noqa: SIM115 (the callers close it)
    except BaseException:
        os.close(fd)
        raise


def check_regular_file(path: str | os.PathLike[str]) -> None:
    """Raise InputError (one sentence) unless ``path`` names a regular file that can be opened for reading: the
    check every command makes of its input files before any work (:func:`_open_binary`)."""
    _open_binary(os.fspath(path)).close()


def _printable(body: bytes, delimiter: str) -> bool:
    """True when the records ``body`` hold only printable ASCII (0x20-0x7E) besides line ends and the delimiter."""
    data = np.frombuffer(body, dtype=np.uint8)
    if not data.size:
        return True
    if int(data.max()) >= 0x7F:
        return False
    allowed = body.count(b"\n") + (body.count(b"\t") if delimiter == "\t" else 0)
    return int(np.count_nonzero(data < 0x20)) == allowed


#: the characters ``str.strip()`` removes (``str.isspace``), but the line end
_SPACES = "".join(c for c in map(chr, range(0x3001)) if c.isspace() and c != "\n")


def _unpadded(body: str) -> bool:
    """True when ``body`` holds no whitespace but line ends."""
    return not any(c in body for c in _SPACES)


def _plain(body: str) -> bool:
    """True when every line of ``body`` (without its final newline) is one record Arrow can parse as the csv
    module would: no quote character, no carriage return, no blank line, no blanks around a line (a blank or
    whitespace-only line needs the csv-module path, which skips it)."""
    return not (
        any(s in body for s in ('"', "\r", "\n\n", " \n", "\t\n"))
        or body.endswith((" ", "\t"))
        or body.startswith(("\n", " ", "\t"))
    )


def _plain_header(head: str, delimiter: str) -> list[str] | None:
    """The names of a plain header line, or None when they are not unique, non-empty and unpadded."""
    header = head.split(delimiter)
    if len(set(header)) != len(header) or any(h.strip() != h or not h for h in header):
        return None
    return header


def _arrow_delimited(body: bytes, header: list[str], delimiter: str) -> tuple[pd.DataFrame, dict[str, pa.Array]] | None:
    """Plain records (:func:`_plain`) parsed by Arrow's CSV reader, every column as text: object columns, and the
    Arrow arrays they came from (:attr:`Table.arrow`); None when Arrow refuses them (e.g. a record with the wrong
    number of fields: the csv-module path words it)."""
    try:
        table = pa_csv.read_csv(
            io.BytesIO(body),
            read_options=pa_csv.ReadOptions(column_names=header, use_threads=True),
            parse_options=pa_csv.ParseOptions(
                delimiter=delimiter, quote_char=False, newlines_in_values=False, ignore_empty_lines=False
            ),
            convert_options=pa_csv.ConvertOptions(
                column_types={h: pa.string() for h in header}, strings_can_be_null=False
            ),
        )
    except (pa.ArrowInvalid, ValueError):
        return None
    arrow = {name: table.column(name).combine_chunks() for name in header}
    frame = pd.DataFrame(
        {name: np.asarray(arrow[name].to_numpy(zero_copy_only=False), dtype=object) for name in header},
        columns=header,
        dtype=object,
    )
    return frame, arrow


_DELIMITERS = {",": ("comma", "CSV", ".csv"), "\t": ("tab", "TSV", ".tsv")}


def _check_delimiter(header: list[str], path: str, delimiter: str, header_line: int) -> None:
    """A header of one name that holds the other delimiter (``item_id,score`` in a ``.tsv``) means the file is
    separated by that one: InputError saying so, rather than a column "missing" that is plainly there."""
    other = "\t" if delimiter == "," else ","
    if len(header) == 1 and other in header[0]:
        name, kind, ext = _DELIMITERS[other]
        expected = _DELIMITERS[delimiter][1]
        raise InputError(
            f"{path}:{header_line}: the file seems {name}-separated (its header {header[0][:60]!r} has no "
            f"{_DELIMITERS[delimiter][0]}), but its extension says {expected}; save it with the extension {ext}.",
            path=path,
            line=header_line,
        )


def _check_header(header: list[str], path: str, header_line: int, delimiter: str = ",") -> list[str]:
    """The header's names, stripped; an empty or repeated name, or a header of the other delimiter
    (:func:`_check_delimiter`), raises InputError with its line and column."""
    _check_delimiter(header, path, delimiter, header_line)
    header = [h.strip() for h in header]
    seen: dict[str, int] = {}
    for j, name in enumerate(header):
        if name == "":
            raise InputError(f"{path}:{header_line}: column {j + 1}: the header has an empty column name.")
        if name in seen:
            raise InputError(
                f"{path}:{header_line}: column {j + 1}: the column name {name!r} appears twice "
                f"(also column {seen[name] + 1})."
            )
        seen[name] = j
    return header


def _delimited_table(rows: list[list[str]], starts: list[int], header: list[str], path: str) -> Table:
    """A ``Table`` of string cells; a record whose field count differs from the header's raises InputError."""
    width = len(header)
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    bad = np.flatnonzero(lengths != width)
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{path}:{starts[i]}: the record has {lengths[i]} fields but the header has {width}.")
    if rows:
        frame = pd.DataFrame(rows, columns=header, dtype=object)
    else:
        frame = pd.DataFrame({name: pd.Series([], dtype=object) for name in header})
    return Table(frame=frame, lines=np.asarray(starts, dtype=np.int64), path=path)


def _jsonl_table(records: list[dict[str, Any]], starts: list[int], path: str, printable: bool = False) -> Table:
    """The records as object columns, each value as JSON gave it (a key a record lacks is None): built column by
    column, so that no type is inferred (``DataFrame.from_records`` would make the integers of a column with a
    missing key floats)."""
    columns: dict[str, None] = {}
    for rec in records:
        for key in rec:
            columns.setdefault(key, None)
    frame = pd.DataFrame(
        {key: pd.Series([rec.get(key) for rec in records], dtype=object) for key in columns},
        columns=list(columns),
        index=pd.RangeIndex(len(records)),
    )
    return Table(frame=frame, lines=np.asarray(starts, dtype=np.int64), path=path, printable=printable)


class _RepeatedKey(ValueError):
    """A JSON object names a key twice (``json`` keeps the last value silently)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of the JSONL reader: the object as a dict, or :class:`_RepeatedKey` for its first
    repeated key (RFC 8259 section 4: names "SHOULD be unique"; a repeat has no agreed meaning, so it is refused)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return out


#: the JSONL decoder: ``json.loads`` with :func:`_unique_keys`
_DECODE = json.JSONDecoder(object_pairs_hook=_unique_keys).decode


def _iter_plain_delimited(path: str, delimiter: str, chunk_rows: int) -> Iterator[Table]:
    """CSV/TSV in chunks: while the lines are plain (:func:`_plain`), ``chunk_rows`` lines at a time parsed by
    Arrow (the ingest target; measurements: docs/studies/code-notes.md); from the first chunk that is not, the csv
    module reads on from the start of that chunk (the earlier chunks ended at a line end outside any quotes)."""
    line0, offset, yielded = 0, 0, False
    header: list[str] | None = None
    with _open_binary(path) as raw:
        try:
            head = raw.readline().decode("utf-8-sig")
            if head.endswith("\n") and _plain(head[:-1]):
                header = _plain_header(head[:-1], delimiter)
            if header is not None:
                _check_delimiter(header, path, delimiter, 1)
                line0, offset = 1, raw.tell()
                blocks = _LineBlocks(raw)
                while True:
                    body, n = blocks.take(chunk_rows)
                    if n == 0:
                        if yielded:
                            return
                        header, line0, offset = None, 0, 0  # a header and no records: the csv-module path words it
                        break
                    text = body.decode("utf-8")
                    parsed = _arrow_delimited(body, header, delimiter) if _plain(text) else None
                    if parsed is None or len(parsed[0]) != n:
                        break  # the csv module reads on from this chunk
                    lines = np.arange(line0 + 1, line0 + n + 1, dtype=np.int64)
                    yield Table(
                        frame=parsed[0],
                        lines=lines,
                        path=path,
                        unpadded=_unpadded(text),
                        printable=_printable(body, delimiter),
                        arrow=parsed[1],
                    )
                    line0, offset, yielded = line0 + n, offset + len(body), True
        except UnicodeDecodeError:
            _locate_bad_utf8(path)
            raise
        raw.seek(offset)
        fh = io.TextIOWrapper(raw, encoding="utf-8-sig" if offset == 0 else "utf-8", errors="strict", newline="")
        try:
            yield from _iter_delimited(fh, path, delimiter, chunk_rows, header=header, line0=line0, yielded=yielded)
        except UnicodeDecodeError:
            _locate_bad_utf8(path)
            raise
        finally:
            fh.detach()


class _LineBlocks:
    """Whole lines of a binary file, ``n`` at a time, read in blocks of ``block`` bytes, the ``n``-th line end found
    with numpy (the ingest target; measurements: docs/studies/code-notes.md)."""

    def __init__(self, raw: io.BufferedReader, block: int = 1 << 24) -> None:
        self.raw, self.block, self.rest = raw, block, b""

    def take(self, n: int) -> tuple[bytes, int]:
        """The next ``n`` lines (fewer at the end of the file) as one bytes object, and their number."""
        parts, have = [self.rest], self.rest.count(b"\n")
        while have < n:
            data = self.raw.read(self.block)
            if not data:
                break
            parts.append(data)
            have += data.count(b"\n")
        buf = b"".join(parts)
        if have >= n:
            ends = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 10)
            cut = int(ends[n - 1]) + 1
            self.rest = buf[cut:]
            return buf[:cut], n
        self.rest = b""
        return buf, have + (1 if buf and not buf.endswith(b"\n") else 0)


def _locate_bad_utf8(path: str) -> None:
    """Raise InputError naming the line and column of the first byte of ``path`` that is not valid UTF-8."""
    with _open_binary(path) as fh:
        for n, raw in enumerate(fh, start=1):
            try:
                raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{path}:{n}: column {exc.start + 1}: the file is not valid UTF-8 (byte "
                    f"0x{raw[exc.start : exc.start + 1].hex()}); save it as UTF-8 and try again."
                ) from None


def _open_parquet(path: str) -> Any:
    """The ``pyarrow.parquet.ParquetFile``; a missing, corrupt or column-less file is one InputError."""
    import pyarrow.parquet as pq

    check_regular_file(path)
    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a corrupt file
        raise InputError(f"{path}: cannot read the Parquet file ({exc}).") from None
    if not pf.schema_arrow.names:
        raise InputError(f"{path}: the file is empty; expected named columns.")
    return pf


def _iter_parquet(path: str, chunk_rows: int) -> Iterator[Table]:
    pf = _open_parquet(path)
    done = 0
    empty = True
    for batch in pf.iter_batches(batch_size=chunk_rows):
        frame = batch.to_pandas().reset_index(drop=True)
        yield Table(
            frame=frame, lines=np.arange(done + 1, done + len(frame) + 1, dtype=np.int64), path=path, unit="row"
        )
        done += len(frame)
        empty = False
    if empty:
        yield Table(
            frame=pf.schema_arrow.empty_table().to_pandas(), lines=np.zeros(0, dtype=np.int64), path=path, unit="row"
        )


def _iter_jsonl(fh: Iterable[str], path: str, chunk_rows: int) -> Iterator[Table]:
    """JSONL records in chunks. A chunk is ``printable`` (:class:`Table`) when its lines are ASCII without a
    backslash: JSON refuses a raw control character inside a string, so only an escape could make one."""
    records: list[dict[str, Any]] = []
    starts: list[int] = []
    any_record = False
    decode = _DECODE
    printable = True
    for n, line in enumerate(fh, start=1):
        if not line.strip():
            continue
        if printable and (not line.isascii() or "\\" in line):
            printable = False
        try:
            rec = decode(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{n}: column {exc.colno}: not valid JSON ({exc.msg}).") from None
        except _RepeatedKey as exc:
            raise InputError(
                f"{path}:{n}: field {exc.key!r}: the key appears twice in one object; give each key once.",
                path=path,
                line=n,
                field=exc.key,
            ) from None
        except RecursionError:
            raise InputError(f"{path}:{n}: the JSON is nested too deeply.") from None
        if not isinstance(rec, dict):
            raise InputError(f"{path}:{n}: expected a JSON object per line, found {type(rec).__name__}.")
        records.append(rec)
        starts.append(n)
        if len(records) >= chunk_rows:
            yield _jsonl_table(records, starts, path, printable)
            records, starts, any_record, printable = [], [], True, True
    if records or not any_record:
        if not records:
            raise InputError(f"{path}: the file is empty; expected one JSON object per line.")
        yield _jsonl_table(records, starts, path, printable)


def _iter_delimited(
    fh: Any,
    path: str,
    delimiter: str,
    chunk_rows: int,
    *,
    header: list[str] | None = None,
    line0: int = 0,
    yielded: bool = False,
) -> Iterator[Table]:
    """CSV/TSV records in chunks, parsed by the csv module; ``fh`` may start after ``line0`` lines already read
    (with the ``header`` found there, and ``yielded`` when records were given already)."""
    if delimiter == ",":
        reader = csv.reader(fh, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL, strict=True)
    else:
        reader = csv.reader(fh, delimiter=delimiter, quoting=csv.QUOTE_NONE, strict=True)
    rows: list[list[str]] = []
    starts: list[int] = []
    prev = line0
    try:
        for rec in reader:
            start = prev + 1
            prev = line0 + reader.line_num
            if not rec or (len(rec) == 1 and rec[0].strip() == ""):
                continue  # blank line
            if header is None:
                header = _check_header(rec, path, start, delimiter)
                continue
            rows.append(rec)
            starts.append(start)
            if len(rows) >= chunk_rows:
                yield _delimited_table(rows, starts, header, path)
                rows, starts, yielded = [], [], True
    except csv.Error as exc:
        raise InputError(
            f"{path}:{line0 + reader.line_num}: the file is not valid {'CSV' if delimiter == ',' else 'TSV'} ({exc})."
        ) from None
    if header is None:
        raise InputError(f"{path}: the file is empty; expected a header line naming the columns.")
    if rows or not yielded:
        yield _delimited_table(rows, starts, header, path)


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
