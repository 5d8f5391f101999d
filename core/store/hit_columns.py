"""HITs read column-wise from the project file, and the files of ``easl next`` (JSONL records, CSV or Parquet).

A HIT set is read as integer columns: the HITs (``hit_no``, ``hit_id``, ``iteration``), then their items from
``hit_items`` (one range of its primary key when the HITs are consecutive, as one iteration's are; only the items
when every HIT has the positions ``0 .. w - 1``; a join by the HITs' index otherwise), then the ids and texts of
those items in one read (a scan of ``items`` when they are a large share of it). Integers travel as one
``group_concat`` text per column, parsed by numpy, and strings as one JSON array per column, parsed on demand: no
Python tuple per row, for the speed of ``easl next`` at scale (docs/studies/benchmarks.md).

The long form (one row per HIT and position: ``hit_id, iteration, position, item_id, text`` and the items' extra
columns) is assembled with Arrow's ``take`` from the items' ids and texts read NUL-joined (:func:`read_strings`),
and written by Arrow's CSV writer (the bytes of ``core.tables.write_table``) or Parquet writer, or joined into JSON
lines by Arrow's string functions (the bytes of ``json.dumps``), without a pandas DataFrame; projects whose items
have extra columns go through pandas, whose type inference decides how those columns are written.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.store.arrow_columns import (
    bits,
    integers,
    joined_bytes,
    joined_strings,
    strings,
    text_array,
    text_scalar,
    write_csv_tables,
)
from easl_toolkit.core.store.db import connect, fill_temp
from easl_toolkit.core.store.hit_rows import hit_ids

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

LONG_COLUMNS = ("hit_id", "iteration", "position", "item_id", "text")  # the long form of HITs (easl next)
DENSE_RANGE = 2  # read a key range of hit_items when it holds at most this many rows per wanted row


@dataclass(frozen=True)
class HitColumns:
    """HITs column-wise: per HIT ``hit_id`` and ``iteration`` (in creation order); per (HIT, position), in HIT then
    position order, ``owner`` (the row of its HIT), ``position``, ``item`` (the item's position in the model
    arrays) and ``at`` (the item's row in ``cells``). ``cells`` holds, per column of ``names`` (``item_id,
    text[, data]``), the JSON array of that column over the distinct items read; ``hit_ids`` is the JSON array of
    the HITs' ids."""

    hit_ids: str
    iteration: NDArray[Any]
    owner: NDArray[Any]
    position: NDArray[Any]
    item: NDArray[Any]
    at: NDArray[Any]
    names: list[str]
    cells: list[str]

    @property
    def n_hits(self) -> int:
        """HITs with at least one item."""
        return int(np.count_nonzero(np.diff(self.owner)) + 1) if self.owner.size else 0

    @property
    def hit_id(self) -> list[str]:
        """The HITs' ids (one per HIT)."""
        ids: list[str] = json.loads(self.hit_ids)
        return ids

    def column(self, name: str) -> NDArray[Any]:
        """The item column ``name`` (of ``names``) per (HIT, position), as an object array."""
        parsed = json.loads(self.cells[self.names.index(name)])
        values = np.empty(len(parsed), dtype=object)
        values[:] = parsed
        out: NDArray[Any] = values[self.at]
        return out


def _ints(text: str | None, count: int) -> NDArray[Any]:
    """The ``count`` integers of a ``group_concat`` text (None for no rows)."""
    if not count:
        return np.zeros(0, dtype=np.int64)
    values = np.fromstring(text or "", dtype=np.int64, sep=",")  # text mode: a C parser, no Python int per value
    if values.size != count:
        raise ValueError(f"expected {count} integers, parsed {values.size}")  # never: SQLite wrote them
    return values


def read_hit_columns(
    conn: sqlite3.Connection, where: str, params: tuple[Any, ...], item_names: list[str], n_items: int
) -> HitColumns | None:
    """The HITs ``h`` matching ``where`` (:class:`HitColumns`), with the ``item_names`` columns of their items;
    None when no HIT matches."""
    n, nos_text, ids_text, its_text = conn.execute(
        "SELECT COUNT(*), group_concat(hit_no), json_group_array(hit_id), group_concat(iteration) "
        f"FROM (SELECT h.hit_no, h.hit_id, h.iteration FROM hits h WHERE {where} ORDER BY h.hit_no)",
        params,
    ).fetchone()
    if not n:
        return None
    nos, its = _ints(nos_text, n), _ints(its_text, n)
    if np.any(np.diff(nos) < 0):  # SQLite keeps the subquery's order; sorted here should it ever not
        order = np.argsort(nos, kind="stable")
        ids = json.loads(ids_text)
        nos, its, ids_text = nos[order], its[order], json.dumps([ids[i] for i in order.tolist()])
    lo, hi = int(nos[0]), int(nos[-1])
    if hi - lo + 1 == n:  # consecutive keys (one iteration): one range of the primary key
        m, p_min, p_max, item_text = conn.execute(
            "SELECT COUNT(*), MIN(position), MAX(position), group_concat(item_idx) FROM "
            "(SELECT position, item_idx FROM hit_items WHERE hit_no BETWEEN ? AND ?)",
            (lo, hi),
        ).fetchone()
        width = 0 if p_max is None else p_max + 1
        if m and p_min == 0 and m == n * width:
            # every HIT has the positions 0..width-1 (the key (hit_no, position) is unique and none lies
            # outside them): the rows are HIT by HIT in key order, and only the items need reading
            owner = np.repeat(np.arange(n, dtype=np.int64), width)
            position = np.tile(np.arange(width, dtype=np.int64), n)
            return _with_items(conn, ids_text, its, owner, position, _ints(item_text, m), item_names, n_items)
    if hi - lo + 1 <= DENSE_RANGE * n:  # nearly consecutive keys: one range, the others filtered out below
        query = "SELECT hit_no, position, item_idx FROM hit_items WHERE hit_no BETWEEN ? AND ?"
        query_params: tuple[Any, ...] = (lo, hi)
    else:  # scattered HITs (open ones of several iterations): by the HITs' index, then by key
        query = (
            "SELECT hi.hit_no, hi.position, hi.item_idx FROM hits h JOIN hit_items hi ON hi.hit_no = h.hit_no "
            f"WHERE {where}"
        )
        query_params = params
    m, *texts = conn.execute(
        f"SELECT COUNT(*), group_concat(hit_no), group_concat(position), group_concat(item_idx) FROM ({query})",
        query_params,
    ).fetchone()
    hit_no, position, item = (_ints(t, m) for t in texts)
    wanted = np.zeros(hi - lo + 1, dtype=bool)
    wanted[nos - lo] = True
    keep = wanted[hit_no - lo]
    if not keep.all():
        hit_no, position, item = hit_no[keep], position[keep], item[keep]
    key = hit_no * (int(position.max(initial=0)) + 1) + position
    if np.any(np.diff(key) < 0):
        order = np.argsort(key, kind="stable")
        hit_no, position, item = hit_no[order], position[order], item[order]
    owner = np.searchsorted(nos, hit_no)
    return _with_items(conn, ids_text, its, owner, position, item, item_names, n_items)


def _with_items(
    conn: sqlite3.Connection,
    ids_text: str,
    its: NDArray[Any],
    owner: NDArray[Any],
    position: NDArray[Any],
    item: NDArray[Any],
    item_names: list[str],
    n_items: int,
) -> HitColumns:
    """:class:`HitColumns` of the HITs and their items read so far, with the items' ``item_names`` columns, one
    JSON array each (none read when ``item_names`` is empty: ``cells`` is empty and ``at`` is ``item``)."""
    if not item_names:
        return HitColumns(ids_text, its, owner, position, item, item, item_names, [])
    source, at = _item_source(conn, item, item_names, n_items)
    select = ", ".join(f"json_group_array({c})" for c in item_names)
    cells = list(conn.execute(f"SELECT {select} FROM {source}").fetchone())
    return HitColumns(ids_text, its, owner, position, item, at, item_names, cells)


EVERY_ITEM = "items NOT INDEXED"  # every item, in index order: a scan of the table's B-tree (never the id index)
SCAN_SHARE = 8  # every item is read (a scan) when the entries wanted number at least 1 / SCAN_SHARE of the items
SLICE_HITS = 50_000  # HITs per slice of a new iteration's file (write_started_csv): a few MB of columns at a time
MMAP_BYTES = 1 << 30  # a reader's memory-mapped span of the file: pages come from the OS cache, not copied


def scans_every_item(n_entries: int, n_items: int) -> bool:
    """Whether ``n_entries`` item positions are read as a scan of every item rather than by key."""
    return n_entries * SCAN_SHARE >= n_items


@contextlib.contextmanager
def read_only(path: str) -> Iterator[sqlite3.Connection]:
    """A read-only, memory-mapped connection of its own to the project file ``path`` (for a thread reading beside
    the connection of ``core.store.Project``; the items never change after ``easl init``)."""
    reader = connect(path, readonly=True)
    try:
        reader.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        yield reader
    finally:
        reader.close()


def read_every_item(path: str, names: list[str]) -> list[pa.Array]:
    """The columns ``names`` of every item, in index order, as Arrow string arrays (:func:`read_strings`), through
    a connection of its own (:func:`read_only`)."""
    with read_only(path) as reader:
        return read_strings(reader, EVERY_ITEM, names)


def _item_source(
    conn: sqlite3.Connection, item: NDArray[Any], names: list[str], n_items: int
) -> tuple[str, NDArray[Any]]:
    """``(source, at)``: the rows of ``items`` that ``item`` refers to, in index order, as a ``FROM`` source with
    the columns ``names``, and per entry of ``item`` its row in them: every item (:data:`EVERY_ITEM`, a scan in
    key order) when ``item`` covers a large share of them, else the wanted rows by key."""
    if scans_every_item(item.size, n_items):
        return EVERY_ITEM, item
    wanted = np.unique(item)
    fill_temp(conn, "_items", wanted.tolist())
    source = f"(SELECT {', '.join(names)} FROM items WHERE idx IN (SELECT v FROM temp._items) ORDER BY idx)"
    return source, np.searchsorted(wanted, item)


def read_item_strings(
    conn: sqlite3.Connection, item: NDArray[Any], names: list[str], n_items: int
) -> tuple[list[pa.Array], NDArray[Any]]:
    """``(arrays, at)``: the ``names`` columns of the items ``item`` refers to as Arrow string arrays
    (:func:`read_strings`) and, per entry of ``item``, its row in them (:func:`_item_source`)."""
    source, at = _item_source(conn, item, names, n_items)
    return read_strings(conn, source, names), at


def read_strings(conn: sqlite3.Connection, source: str, names: list[str]) -> list[pa.Array]:
    """The text columns ``names`` of the rows of ``source`` (e.g. :data:`EVERY_ITEM`) as Arrow string arrays: each
    read as one text of NUL-joined values (:func:`core.store.arrow_columns.joined_strings`), or as a JSON array
    when a value holds a NUL byte."""
    joined = ", ".join(f"CAST(group_concat({c}, char(0)) AS BLOB)" for c in names)
    count, *blobs = conn.execute(f"SELECT COUNT(*), {joined} FROM {source}").fetchone()
    arrays = []
    for name, blob in zip(names, blobs):
        array = joined_strings(blob, count)
        if array is None:  # a value with a NUL byte of its own
            (text,) = conn.execute(f"SELECT json_group_array({name}) FROM {source}").fetchone()
            array = strings(text)
        arrays.append(array)
    return arrays


#: the HIT file formats of ``easl next --output`` by extension (JSONL records; CSV and Parquet in long form)
HIT_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


@dataclass(frozen=True)
class LongHits:
    """The long form of a HIT set (README, ``easl next``): ``table`` (Arrow) when the items have no extra
    columns, else ``cols`` (the HITs read with their items' ``data``) and the items' ``item_columns``, written
    through pandas (:attr:`frame`); ``n_hits`` counts its HITs."""

    n_hits: int
    table: pa.Table | None = None
    cols: HitColumns | None = None
    item_columns: tuple[str, ...] = ()

    @property
    def frame(self) -> pd.DataFrame:
        """The long form as a pandas DataFrame (:func:`long_frame`; the items have extra columns)."""
        return long_frame(self.cols, list(self.item_columns))

    def write_csv(self, path: str | os.PathLike[str], *, raw_cells: bool = False) -> None:
        """Write the long form to ``path`` as CSV, atomically (``core.outputs.atomic_outputs``; a write error is
        one ``InputError`` naming ``path``); the bytes of ``core.tables.write_table``."""
        from easl_toolkit.core.outputs import atomic_outputs

        with atomic_outputs([path]) as (tmp,):
            self.write_to(tmp, path, "csv", raw_cells=raw_cells)

    def write_to(self, tmp: str, path: str | os.PathLike[str], fmt: str, *, raw_cells: bool = False) -> None:
        """Write the HITs as ``fmt`` (a value of :data:`HIT_FORMATS`) into the file ``tmp``, which the caller
        renames to ``path`` (e.g. after a commit); a write error is one ``InputError`` naming ``path``. JSONL holds
        the HIT records (:func:`hit_records`), CSV and Parquet the long form, CSV with the text cells a spreadsheet
        would execute neutralised unless ``raw_cells`` (``core.outputs.neutralise_cells``)."""
        if self.table is not None:
            table = self.table
            _writing_to(path, lambda: write_long_tables([table], tmp, fmt, raw_cells=raw_cells))
        elif fmt == "jsonl":
            lines = "".join(
                json.dumps(r, ensure_ascii=False) + "\n" for r in hit_records(self.cols, bool(self.item_columns))
            )
            _writing_to(path, lambda: Path(tmp).write_text(lines, encoding="utf-8"))
        else:
            from easl_toolkit.core.tables import write_table_to

            write_table_to(self.frame, tmp, path, raw_cells=raw_cells)  # (the format of path's extension)


def write_long_tables(tables: Iterable[pa.Table], tmp: str, fmt: str, *, raw_cells: bool = False) -> None:
    """Write the long form given as consecutive tables (whole HITs each, one schema, at least one table) into the
    file ``tmp`` as ``fmt``: CSV (:func:`core.store.arrow_columns.write_csv_tables`), JSONL (the HIT records,
    :func:`jsonl_records`) or Parquet (one table: the same file however the rows come)."""
    if fmt == "csv":
        write_csv_tables(tables, tmp, raw_cells=raw_cells)
    elif fmt == "jsonl":
        with open(tmp, "wb") as out:
            for table in tables:
                out.write(jsonl_records(table))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.concat_tables(tables), tmp)


def jsonl_records(table: pa.Table) -> pa.Buffer:
    """The HIT records of the long form ``table`` (items without extra columns; the rows of a HIT together, in
    position order) as JSON lines: per HIT the bytes of ``json.dumps(record, ensure_ascii=False) + "\\n"`` for
    ``record = {"hit_id": ..., "iteration": ..., "items": [{"item_id": ..., "text": ...}, ...]}`` (the JSONL of
    ``easl next``, :func:`hit_records`), joined by Arrow's string functions (:func:`json_escaped` for the strings)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    hit_id = table.column("hit_id").combine_chunks()
    first = np.ones(n, dtype=bool)  # the first row of each HIT
    if n > 1:
        first[1:] = bits(pc.not_equal(hit_id[1:], hit_id[:-1]))
    starts = np.flatnonzero(first)
    item_id, text = (json_escaped(table.column(c).combine_chunks()) for c in ("item_id", "text"))
    pieces = [text_scalar(t) for t in ('{"item_id": "', '", "text": "', '"}', "")]
    items = pc.binary_join_element_wise(pieces[0], item_id, pieces[1], text, pieces[2], pieces[3])
    lists = pa.LargeListArray.from_arrays(integers(np.append(starts, n)), items)
    iteration = table.column("iteration").combine_chunks().take(integers(starts)).cast(pa.large_string())
    lines = pc.binary_join_element_wise(
        text_scalar('{"hit_id": "'),
        json_escaped(hit_id.take(integers(starts))),
        text_scalar('", "iteration": '),
        iteration,
        text_scalar(', "items": ['),
        pc.binary_join(lists, text_scalar(", ")),
        text_scalar("]}\n"),
        text_scalar(""),
    )
    return joined_bytes(lines)


def json_escaped(array: pa.Array) -> pa.Array:
    """Each string of ``array`` as the inside of its JSON text, the bytes of ``json.dumps(s, ensure_ascii=False)``
    without the quotes: ``array`` itself, except that the strings holding a double quote, a backslash or a control
    character below U+0020 (the characters ``json`` escapes; none when no byte of the data is one) are escaped by
    ``json.dumps`` one at a time."""
    import pyarrow.compute as pc

    data = array.buffers()[2]  # UTF-8: no byte of a multi-byte character is below 0x80, so the bytes tell
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
    if not np.any((raw < 0x20) | (raw == 0x22) | (raw == 0x5C)):
        return array
    escape = pc.match_substring_regex(array, '[\\x{0}-\\x{1f}"\\\\]')
    escaped = text_array([json.dumps(s, ensure_ascii=False)[1:-1] for s in array.filter(escape).to_pylist()])
    return pc.replace_with_mask(array, escape, escaped.cast(array.type))


def _writing_to(path: str | os.PathLike[str], write: Callable[[], object]) -> None:
    """Run ``write``; an ``OSError`` becomes one ``InputError`` naming ``path`` (the file the caller renames to)."""
    try:
        write()
    except OSError as exc:
        from easl_toolkit.core.errors import InputError

        raise InputError(
            f"{path}: cannot write the file ({exc.strerror or exc}); nothing was written.", path=os.fspath(path)
        ) from None


def long_hits(
    conn: sqlite3.Connection,
    cols: HitColumns | None,
    item_columns: list[str],
    n_items: int,
    items: tuple[list[pa.Array], NDArray[Any]] | None = None,
) -> LongHits:
    """The long form of ``cols``: read without item columns, whose ``item_id`` and ``text`` are ``items`` (as
    :func:`read_item_strings` gives them) or read here, or, with ``item_columns``, read with ``item_id, text, data``
    (:func:`long_frame`; an item's extra column named like a long-form column is left out)."""
    if item_columns or cols is None:
        return LongHits(n_hits=0 if cols is None else cols.n_hits, cols=cols, item_columns=tuple(item_columns))
    hit_id = strings(cols.hit_ids).take(integers(cols.owner))
    if items is None:
        items = read_item_strings(conn, cols.item, ["item_id", "text"], n_items)
    return LongHits(n_hits=cols.n_hits, table=long_table(hit_id, cols.iteration[cols.owner], cols.position, items))


def started_long_hits(iteration: int, hits: NDArray[Any], items: tuple[list[pa.Array], NDArray[Any]]) -> LongHits:
    """The long form of an iteration's HITs just recorded by ``core.store.hit_rows.insert_iteration`` (every one
    open, items without extra columns), from the HITs chosen (``hits``: rows of item positions, at least one) rather
    than read back: HIT ``j`` is ``it{iteration}-{j}`` and holds ``hits[j]`` at positions ``0 .. width - 1``.
    ``items``: the items' ``item_id`` and ``text`` arrays and, per entry of ``hits`` (row by row), its row in them
    (:func:`read_item_strings`)."""
    return LongHits(n_hits=hits.shape[0], table=_started_slice(iteration, hits, items, 0, hits.shape[0]))


def write_started(
    tmp: str,
    path: str | os.PathLike[str],
    fmt: str,
    iteration: int,
    hits: NDArray[Any],
    items: tuple[list[pa.Array], NDArray[Any]],
    slice_hits: int = SLICE_HITS,
    *,
    raw_cells: bool = False,
) -> None:
    """Write the HITs of :func:`started_long_hits` as ``fmt`` into the file ``tmp`` (renamed to ``path`` by the
    caller; :meth:`LongHits.write_to`), built and written ``slice_hits`` HITs at a time, so that the columns take
    the memory of a slice, not of the iteration (the same bytes; a write error is one ``InputError`` naming
    ``path``)."""
    n_hits = hits.shape[0]
    slices = (
        _started_slice(iteration, hits, items, lo, min(lo + slice_hits, n_hits)) for lo in range(0, n_hits, slice_hits)
    )
    _writing_to(path, lambda: write_long_tables(slices, tmp, fmt, raw_cells=raw_cells))


def _started_slice(
    iteration: int, hits: NDArray[Any], items: tuple[list[pa.Array], NDArray[Any]], lo: int, hi: int
) -> pa.Table:
    """Rows of the HITs ``lo .. hi - 1`` of :func:`started_long_hits`."""
    n_hits, width = hits.shape
    ids = hit_ids(iteration, n_hits, lo, hi)
    hit_id = text_array(ids).take(integers(np.repeat(np.arange(hi - lo), width)))
    position = np.tile(np.arange(width, dtype=np.int64), hi - lo)
    iterations = np.full((hi - lo) * width, iteration, dtype=np.int64)
    arrays, at = items
    return long_table(hit_id, iterations, position, (arrays, at[lo * width : hi * width]))


def long_table(
    hit_id: pa.Array,
    iteration: NDArray[Any],
    position: NDArray[Any],
    items: tuple[list[pa.Array], NDArray[Any]],
) -> pa.Table:
    """The long form's Arrow table from its columns per row and ``items``: the items' ``item_id`` and ``text``
    arrays and per row its item's row in them, gathered by Arrow's ``take``."""
    import pyarrow as pa

    (item_id, text), at = items
    rows = integers(at)
    return pa.Table.from_arrays(
        [hit_id, integers(iteration), integers(position), item_id.take(rows), text.take(rows)],
        names=list(LONG_COLUMNS),
    )


def hit_records(cols: HitColumns | None, with_data: bool) -> list[dict[str, Any]]:
    """HIT records (``hit_id, iteration, items``) of ``cols``, in creation order; each item has ``item_id``,
    ``text`` and, ``with_data``, the item's extra columns (``cols`` read with ``data``)."""
    if cols is None:
        return []
    entries: list[dict[str, Any]] = [
        {"item_id": i, "text": t} for i, t in zip(cols.column("item_id").tolist(), cols.column("text").tolist())
    ]
    if with_data:
        loads = json.loads
        for entry, data in zip(entries, cols.column("data").tolist()):
            if data != "{}":
                for key, v in loads(data).items():
                    entry.setdefault(key, v)
    ids = cols.hit_id
    ends = np.cumsum(np.bincount(cols.owner, minlength=len(ids))).tolist()
    starts = [0] + ends[:-1]
    return [
        {"hit_id": hit_id, "iteration": iteration, "items": entries[a:b]}
        for hit_id, iteration, a, b in zip(ids, cols.iteration.tolist(), starts, ends)
    ]


def long_frame(cols: HitColumns | None, item_columns: list[str]) -> pd.DataFrame:
    """The long form of ``cols`` as a pandas DataFrame (``core.store.hits.Iterations.open_hits_frame``)."""
    import pandas as pd

    if cols is None:
        return pd.DataFrame(columns=list(LONG_COLUMNS))
    ids = cols.hit_id
    hit_id = np.empty(len(ids), dtype=object)
    hit_id[:] = ids
    frame = pd.DataFrame(
        {
            "hit_id": hit_id[cols.owner],
            "iteration": cols.iteration[cols.owner],
            "position": cols.position,
            "item_id": cols.column("item_id"),
            "text": cols.column("text"),
        }
    )
    if item_columns:
        records = json.loads("[" + ",".join(cols.column("data").tolist()) + "]")
        data = pd.DataFrame.from_records(records, columns=item_columns)
        data = data.drop(columns=[c for c in data.columns if c in LONG_COLUMNS])
        frame = pd.concat([frame, data], axis=1)
    return frame
