"""Damaged project files: SQLite's integrity check, and salvage of every readable record into a new project file.

The observation log is append-only and everything else that matters is derived from it or fixed at ``easl init``
(items, iterations, HITs), so a project whose file has a damaged page can be rebuilt from what can still be read:
:func:`salvage` copies every readable row of the tables into a new file, then rebuilds the derived tables (the live
index, HIT statuses, the cached state) by replaying the salvaged log (:meth:`Project.rebuild`).

Reading past a damaged page: a rowid table is read in rowid order; when a read fails, the next readable rowid is
found by probing ahead (steps 1, 2, 4, ...) and bisecting back, so only the rows of the damaged pages are lost
(B-tree seeks descend through interior pages and never touch the damaged leaf). ``hit_items`` (no rowid) is read
per HIT when a full scan fails. Rows of the new file that would point at lost items or HITs are dropped.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from easl_toolkit.core.errors import ProjectFileError
from easl_toolkit.core.store.db import connect, describe_sqlite_error, link_into_place, remove_files
from easl_toolkit.core.store.schema import FORMAT, migrate

ROWID_TABLES = ("meta", "items", "iterations", "hits", "observations", "events", "rejects", "external_ids")
_PAGE = re.compile(r"\bpage (\d+)", re.IGNORECASE)
_MAX_ROWID = 2**63 - 1


def _read_only(path: str) -> sqlite3.Connection:
    uri = "file:" + os.path.abspath(path).replace("?", "%3f").replace("#", "%23") + "?mode=ro"
    return sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30.0)


def integrity_problems(path: str, limit: int = 100) -> list[str]:
    """SQLite's ``PRAGMA integrity_check`` messages for the file (at most ``limit``); empty when it is sound.

    Raises ``ProjectFileError`` when the file cannot be opened at all (missing, not an SQLite file)."""
    if not os.path.isfile(path):
        raise ProjectFileError(path, "no such project file")
    try:
        conn = _read_only(path)
        try:
            rows = conn.execute(f"PRAGMA integrity_check({int(limit)})").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc).lower():
            raise ProjectFileError(path, describe_sqlite_error(exc)) from None
        return [str(exc)]
    messages = [str(r[0]) for r in rows]
    return [] if messages == ["ok"] else messages


def damaged_pages(problems: list[str]) -> list[int]:
    """The page numbers named in integrity-check messages, sorted."""
    return sorted({int(m) for p in problems for m in _PAGE.findall(p)})


def damaged_tables(path: str) -> list[str]:
    """The tables and indexes whose own integrity check fails (``PRAGMA integrity_check(name)``): used when the
    whole-file check stops at the first damaged page with "database disk image is malformed"."""
    conn = _read_only(path)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        bad = []
        for name in names:
            try:
                rows = conn.execute(f"PRAGMA integrity_check({name})").fetchall()
            except sqlite3.DatabaseError:
                bad.append(name)
                continue
            if [r[0] for r in rows] != ["ok"]:
                bad.append(name)
        return bad
    except sqlite3.DatabaseError:
        return []
    finally:
        conn.close()


_TYPES = {2: "index interior", 5: "table interior", 10: "index leaf", 13: "table leaf"}


def unreadable_pages(path: str, tables: list[str]) -> list[int]:
    """Pages of the given tables' B-trees whose header is not a valid B-tree page, found by walking the trees from
    their root pages in the main file (only when the write-ahead log holds no frames, so the file is complete)."""
    wal = path + "-wal"
    if os.path.exists(wal) and os.path.getsize(wal) > 0:
        return []
    conn = _read_only(path)
    try:
        roots = [
            int(r[0])
            for r in conn.execute(
                "SELECT rootpage FROM sqlite_master "
                "WHERE tbl_name IN (SELECT value FROM json_each(?)) AND rootpage > 0",
                (json.dumps(tables),),
            )
        ]
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    except sqlite3.DatabaseError:
        return []
    finally:
        conn.close()
    bad: set[int] = set()
    with open(path, "rb") as fh:
        n_pages = os.fstat(fh.fileno()).st_size // page_size
        stack, seen = list(roots), set()
        while stack:
            page = stack.pop()
            if page in seen:
                continue
            seen.add(page)
            if not 1 <= page <= n_pages:
                continue
            fh.seek((page - 1) * page_size)
            data = fh.read(page_size)
            head = 100 if page == 1 else 0
            kind = data[head]
            if kind not in _TYPES:
                bad.add(page)
                continue
            if kind in (2, 5):  # interior: left children in the cells, and the right-most child
                n_cells = int.from_bytes(data[head + 3 : head + 5], "big")
                stack.append(int.from_bytes(data[head + 8 : head + 12], "big"))
                for k in range(n_cells):
                    at = int.from_bytes(data[head + 12 + 2 * k : head + 14 + 2 * k], "big")
                    if at + 4 <= page_size:
                        stack.append(int.from_bytes(data[at : at + 4], "big"))
    return sorted(bad)


@dataclass
class SalvageReport:
    """What :func:`salvage` copied: rows per table, rows found damaged or dropped, and the replay check."""

    copied: dict[str, int] = field(default_factory=dict)
    damaged_tables: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    missing_log_positions: int = 0
    verify: dict[str, Any] = field(default_factory=dict)


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})").fetchall()]


def _works(conn: sqlite3.Connection, table: str, start: int) -> bool:
    try:
        conn.execute(f"SELECT rowid FROM {table} WHERE rowid >= ? ORDER BY rowid LIMIT 1", (start,)).fetchall()
        return True
    except sqlite3.DatabaseError:
        return False


def _next_readable(conn: sqlite3.Connection, table: str, base: int) -> int | None:
    """The smallest start ``> base`` (a start that fails) from which a rowid-ordered read works again (None when
    none is found)."""
    step, hi = 1, None
    while base + step <= _MAX_ROWID:
        if _works(conn, table, base + step):
            hi = base + step
            break
        step *= 2
    if hi is None:
        return None
    lo = hi - step if step > 1 else base
    while hi - lo > 1:  # lo fails (or is the failing base), hi works
        mid = (lo + hi) // 2
        if _works(conn, table, mid):
            hi = mid
        else:
            lo = mid
    return hi


def _read_rowid_table(conn: sqlite3.Connection, table: str, cols: list[str]) -> tuple[list[tuple[Any, ...]], bool]:
    """Every readable row of a rowid table (``cols``), and whether a read failed on the way."""
    rows: list[tuple[Any, ...]] = []
    start, damaged = -_MAX_ROWID - 1, False
    select = f"SELECT rowid, {', '.join(cols)} FROM {table} WHERE rowid >= ? ORDER BY rowid"
    while True:
        last = None
        try:
            for r in conn.execute(select, (start,)):
                last = r[0]
                rows.append(tuple(r[1:]))
            return rows, damaged
        except sqlite3.DatabaseError:
            damaged = True
            fails_at = last + 1 if last is not None else start  # reading on from here fails
            if fails_at >= _MAX_ROWID:
                return rows, damaged
            nxt = _next_readable(conn, table, fails_at)
            if nxt is None:
                return rows, damaged
            start = nxt


def _read_hit_items(conn: sqlite3.Connection, key: str, hits: list[Any]) -> tuple[list[tuple[Any, ...]], bool]:
    """Every readable row ``(key, position, item_idx)`` of ``hit_items`` (``key``: its HIT column) and whether a
    read failed; after a failure, HIT by HIT."""
    try:
        return conn.execute(
            f"SELECT {key}, position, item_idx FROM hit_items ORDER BY {key}, position"
        ).fetchall(), False
    except sqlite3.DatabaseError:
        pass
    rows: list[tuple[Any, ...]] = []
    for h in hits:
        try:
            rows.extend(
                conn.execute(
                    f"SELECT {key}, position, item_idx FROM hit_items WHERE {key} = ? ORDER BY position", (h,)
                ).fetchall()
            )
        except sqlite3.DatabaseError:
            continue
    return rows, True


def _insert(conn: sqlite3.Connection, table: str, cols: list[str], rows: list[tuple[Any, ...]]) -> int:
    """Insert rows, one by one after a failed batch (a row that breaks a constraint is dropped)."""
    sql = f"INSERT OR IGNORE INTO {table}({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    conn.execute("SAVEPOINT batch")
    try:
        conn.executemany(sql, rows)
        conn.execute("RELEASE batch")
        return len(rows)
    except sqlite3.Error:
        conn.execute("ROLLBACK TO batch")
        conn.execute("RELEASE batch")
    n = 0
    for row in rows:
        try:
            conn.execute(sql, row)
            n += 1
        except sqlite3.Error:
            continue
    return n


def salvage(path: str, out: str) -> SalvageReport:
    """Copy every readable record of the project file ``path`` into a new project file ``out`` and rebuild its
    derived state by replay (see the module docstring). ``out`` must not exist; it appears only when complete.

    Raises
    ------
    ProjectFileError
        ``out`` exists, or the project's settings (the ``meta`` rows ``format`` and ``hyper``) cannot be read,
        without which no project can be rebuilt.
    """
    from easl_toolkit.core.store.project import Project

    if os.path.lexists(out):
        raise ProjectFileError(out, "already exists; a project file is never overwritten")
    report = SalvageReport()
    src = _read_only(path)
    tmp = os.path.join(os.path.dirname(os.path.abspath(out)), f".{os.path.basename(out)}.{os.getpid()}.salvaging")
    remove_files(tmp)
    try:
        tables = _read_tables(src, report)
        meta: dict[Any, Any] = dict(tables["meta"][1])
        if meta.get("format") != FORMAT or "hyper" not in meta:
            raise ProjectFileError(
                path, "the project's settings (its meta table) cannot be read, so nothing can be salvaged"
            )
        key, hit_items = _read_hits_items(src, tables["hits"], report)
        _write_copy(tmp, tables, key, hit_items, report)
        with Project.open(tmp) as project:
            report.verify = project.rebuild()
        link_into_place(tmp, out)
    except sqlite3.Error as exc:
        raise ProjectFileError(out, f"cannot write the salvaged project ({describe_sqlite_error(exc)})") from None
    finally:
        src.close()
        remove_files(tmp)
    return report


Rows = list[tuple[Any, ...]]


def _read_tables(src: sqlite3.Connection, report: SalvageReport) -> dict[str, tuple[list[str], Rows]]:
    """``table -> (columns, rows)``: every readable row of the rowid tables (:data:`ROWID_TABLES`); the tables
    where a read failed are added to ``report.damaged_tables``."""
    tables: dict[str, tuple[list[str], Rows]] = {}
    for table in ROWID_TABLES:
        try:
            cols = _columns(src, table)
        except sqlite3.DatabaseError:
            cols = []
        if not cols:  # the schema itself is unreadable: take this version's columns
            probe = sqlite3.connect(":memory:")
            migrate(probe, ":memory:")
            cols = _columns(probe, table)
            probe.close()
        rows, damaged = _read_rowid_table(src, table, cols)
        tables[table] = (cols, rows)
        if damaged:
            report.damaged_tables.append(table)
    return tables


def _read_hits_items(src: sqlite3.Connection, hits: tuple[list[str], Rows], report: SalvageReport) -> tuple[str, Rows]:
    """``(key, rows)``: the HIT column of ``hit_items`` (``hit_no`` from schema version 2, ``hit_id`` before) and
    its readable rows (:func:`_read_hit_items`, given the HITs read)."""
    try:
        key = "hit_no" if "hit_no" in _columns(src, "hit_items") else "hit_id"
    except sqlite3.DatabaseError:
        key = "hit_no"
    cols, rows = hits
    hit_col = cols.index(key) if key in cols else None
    hit_items, damaged = _read_hit_items(src, key, [r[hit_col] for r in rows] if hit_col is not None else [])
    if damaged:
        report.damaged_tables.append("hit_items")
    return key, hit_items


def _write_copy(
    tmp: str, tables: dict[str, tuple[list[str], Rows]], key: str, hit_items: Rows, report: SalvageReport
) -> None:
    """Write the rows read into the new file ``tmp`` (one transaction): rows that point at lost items or HITs are
    dropped, lost iterations recreated from their HITs, and the state marked as reflecting no log position (the
    caller rebuilds it)."""
    conn = connect(tmp, readonly=False)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("BEGIN IMMEDIATE")
        migrate(conn, tmp)
        for table in ROWID_TABLES:
            cols, rows = tables[table]
            if table == "meta":
                rows = [r for r in rows if r[0] not in ("state_seq", "state_figures")]
            report.copied[table] = _insert(conn, table, cols, rows)
        if key == "hit_id":  # a version 1 file: its HITs' integer keys are those the copy gave them
            conn.execute("CREATE TEMP TABLE _by_id (hit_id TEXT, position INTEGER, item_idx INTEGER)")
            conn.executemany("INSERT INTO temp._by_id VALUES (?, ?, ?)", hit_items)
            hit_items = conn.execute(
                "SELECT h.hit_no, b.position, b.item_idx FROM temp._by_id b JOIN hits h ON h.hit_id = b.hit_id"
            ).fetchall()
        report.copied["hit_items"] = _insert(conn, "hit_items", ["hit_no", "position", "item_idx"], hit_items)
        for table, where in (
            ("observations", "item_idx NOT IN (SELECT idx FROM items)"),
            ("hit_items", "item_idx NOT IN (SELECT idx FROM items) OR hit_no NOT IN (SELECT hit_no FROM hits)"),
        ):
            n = conn.execute(f"DELETE FROM {table} WHERE {where}").rowcount
            if n:
                report.dropped[table] = n
                report.copied[table] -= n
        conn.execute(
            "INSERT INTO iterations(iteration, started_at, n_hits, log_seq) SELECT h.iteration, "
            "MIN(h.created_at), COUNT(*), 0 FROM hits h WHERE h.iteration NOT IN "
            "(SELECT iteration FROM iterations) GROUP BY h.iteration"
        )
        n_seq, max_seq = conn.execute("SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM observations").fetchone()
        report.missing_log_positions = int(max_seq) - int(n_seq)
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('state_seq', '0')")
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
