"""Parsing the tables users hand us (:mod:`core.tables`): CSV and TSV (Arrow's reader for plain lines, the csv module
otherwise), JSONL and Parquet, whole or in chunks, each record with the line (or row) it starts on.

Text is strict UTF-8 (a byte-order mark is allowed); a bad byte, a malformed record, a ragged row or a bad header is
one ``InputError`` naming the file, line and column. CSV/TSV cells are kept as strings.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
from numpy.typing import NDArray

from core.errors import InputError


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
