"""The SQLite connection of a project file: opening it (WAL), transactions, and small shared helpers.

Every part of :class:`core.store.Project` reaches the file through its :class:`Database` (one transaction per public
mutator, read snapshots); nothing outside ``core/store`` holds the connection. A file built or copied whole (``easl
init``, salvage) is written under a temporary name and linked into place (:func:`link_into_place`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import itertools
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from easl_toolkit.core.errors import ProjectFileError


def now() -> str:
    """The current UTC time as ISO 8601 text (microseconds, ``+00:00``); the time stamp of every record."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds")


def connect(path: str, *, readonly: bool) -> sqlite3.Connection:
    """Open ``path`` in autocommit mode (transactions are explicit) with the project file's settings.

    WAL journal with ``synchronous = FULL``: a committed transaction survives a crash or a power loss (README,
    "The project file": each command or event is applied whole or not at all). Read-only connections never write
    (``mode=ro``).
    """
    if readonly:
        uri = "file:" + os.path.abspath(path).replace("?", "%3f").replace("#", "%23") + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30.0, check_same_thread=False)
    else:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if not readonly:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            conn.close()
            raise ProjectFileError(path, f"cannot switch the project file to WAL mode (got {mode!r})")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA cache_size = -131072")  # up to 128 MiB of page cache: large batches touch many pages
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def fill_temp(conn: sqlite3.Connection, name: str, values: Iterable[Any]) -> None:
    """(Re)fill the temporary one-column table ``temp.<name>(v)`` with distinct ``values``."""
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {name} (v PRIMARY KEY)")
    conn.execute(f"DELETE FROM temp.{name}")
    conn.executemany(f"INSERT OR IGNORE INTO temp.{name}(v) VALUES (?)", ((v,) for v in values))


#: rows per statement of :func:`insert_rows`
ROWS_PER_STATEMENT = 50


def insert_rows(conn: sqlite3.Connection, head: str, row: str, columns: Sequence[Iterable[Any]]) -> None:
    """Insert rows given by column: ``head`` (``"INSERT INTO t(a, b) VALUES "``) followed by :data:`ROWS_PER_STATEMENT`
    copies of ``row`` (``"(?, ?)"``, one ``?`` per column, other terms allowed) per statement, the rest in one
    statement. The rows are those of ``zip(*columns)`` (an endless column, such as ``itertools.repeat``, is cut to
    the others). Many rows per statement: the ingest target (measurements: docs/studies/code-notes.md)."""
    width = len(columns)
    flat = list(itertools.chain.from_iterable(zip(*columns)))  # row by row
    n = len(flat) // width
    k = ROWS_PER_STATEMENT
    whole = n - n % k
    if whole:  # (zip of one iterator k * width times: the whole statements' parameters, the rest left over)
        conn.executemany(head + ", ".join([row] * k), zip(*[iter(flat)] * (k * width)))
    if n > whole:
        conn.execute(head + ", ".join([row] * (n - whole)), flat[whole * width :])


class FileBusy(Exception):
    """Another connection holds the project file's write lock, longer than the caller would wait for it
    (:meth:`Database.transaction` with ``max_wait_s``)."""


#: the busy timeout of every connection (SQLite waits this long for another connection's lock)
BUSY_TIMEOUT_MS = 30_000


def read_columns(conn: sqlite3.Connection, query: str, columns: list[str], params: tuple[Any, ...] = ()) -> list[Any]:
    """The ``columns`` of the rows of ``query`` (in its order), each as one Python list, read as one JSON array per
    column (``json_group_array``): a million cells in a fraction of the time of a million row tuples."""
    select = ", ".join(f"json_group_array({c})" for c in columns)
    row = conn.execute(f"SELECT {select} FROM ({query})", params).fetchone()
    return [json.loads(text) for text in row]


def max_seq(conn: sqlite3.Connection) -> int:
    """The position of the last record of the observation log (0 for an empty log)."""
    return int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM observations").fetchone()[0])


class Database:
    """The connection of an open project file and its transaction discipline, shared by the parts of
    :class:`core.store.Project`.

    Attributes
    ----------
    conn : sqlite3.Connection
    path : str
    readonly : bool
    """

    def __init__(self, conn: sqlite3.Connection, path: str, readonly: bool) -> None:
        self.conn = conn
        self.path = path
        self.readonly = readonly
        self._depth = 0

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None  # type: ignore[assignment]

    @contextlib.contextmanager
    def transaction(self, *, max_wait_s: float | None = None) -> Iterator[None]:
        """One write transaction: ``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error). Nested use inside an
        open transaction becomes a savepoint, so a front end can group several calls into one atomic unit.

        ``max_wait_s``: when another connection holds the write lock, wait at most this long for it (0: not at
        all), then raise :class:`FileBusy`, instead of waiting up to :data:`BUSY_TIMEOUT_MS` (None). In WAL mode,
        once ``BEGIN IMMEDIATE`` holds the lock, nothing in the transaction waits for another connection (but this
        connection's automatic checkpoint, which a caller that must not wait turns off). The plugin's webhook
        writer journals an event rather than wait (``easl_plugin/writer.py``).
        """
        self.writable()
        depth, name = self._depth, f"sp{self._depth}"
        if depth:
            self.conn.execute(f"SAVEPOINT {name}")
        elif max_wait_s is None:
            self.conn.execute("BEGIN IMMEDIATE")
        else:
            self._begin_within(max_wait_s)
        self._depth = depth + 1
        try:
            yield
        except BaseException:
            self.conn.execute(f"ROLLBACK TO {name}" if depth else "ROLLBACK")
            if depth:
                self.conn.execute(f"RELEASE {name}")
            raise
        else:
            self.conn.execute(f"RELEASE {name}" if depth else "COMMIT")
        finally:
            self._depth = depth

    def _begin_within(self, seconds: float) -> None:
        """``BEGIN IMMEDIATE`` with a busy timeout of ``seconds``: :class:`FileBusy` when the write lock stays
        taken that long."""
        self.conn.execute(f"PRAGMA busy_timeout = {max(0, round(1000 * seconds))}")
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc).lower() or "busy" in str(exc).lower():
                raise FileBusy(f"{self.path} is being written by another connection") from exc
            raise
        finally:
            self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    @contextlib.contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """:meth:`transaction`, yielding the connection (for the parts of the project)."""
        with self.transaction():
            yield self.conn

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several reads (a deferred transaction), or the caller's transaction."""
        if self._depth:
            yield self.conn
            return
        self.conn.execute("BEGIN")
        self._depth = 1
        try:
            yield self.conn
        finally:
            self._depth = 0
            self.conn.execute("COMMIT")

    def set_auto_checkpoint(self, pages: int) -> None:
        """Let this connection checkpoint the WAL automatically once it holds ``pages`` pages (0: never; SQLite's
        default is 1,000). A connection that must answer quickly (the plugin's event writer) turns it off and
        calls :meth:`checkpoint` when idle."""
        self.conn.execute(f"PRAGMA wal_autocheckpoint = {int(pages)}")

    def checkpoint(self, mode: str = "PASSIVE") -> None:
        """Copy the WAL into the database file: as far as readers allow (``PASSIVE``: never waits for another
        connection), or all of it, so that the next writer starts the WAL file over (``RESTART``: waits, up to the
        busy timeout, for readers of older snapshots, and keeps writers out meanwhile; the file keeps its size, so
        later commits overwrite it in place)."""
        self.conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()

    def writable(self) -> None:
        """Raise :class:`~core.errors.ProjectFileError` when the project is open read-only."""
        if self.readonly:
            raise ProjectFileError(self.path, "the project is open read-only")


def describe_sqlite_error(exc: BaseException) -> str:
    """What an ``sqlite3`` error means for the project file, as the ``problem`` of a :class:`ProjectFileError`
    (damaged, not a database, locked, read-only, disk I/O, disk full; otherwise SQLite's own words)."""
    text = str(exc)
    low = text.lower()
    if "malformed" in low or "corrupt" in low:
        return f"the project file is damaged ({text}); its integrity check lists the damaged pages"
    if "not a database" in low or "file is encrypted" in low:
        return f"not an SQLite project file, or its first page is damaged ({text})"
    if "locked" in low or "busy" in low:
        return f"the project file is locked by another process ({text}); try again when it has finished"
    if "readonly" in low or "read-only" in low:
        return f"the project file or its directory is read-only ({text})"
    if "disk is full" in low or "database or disk is full" in low:
        return f"the disk is full ({text}); nothing was changed: free some space and try again"
    if "disk i/o" in low:
        return f"the disk reported an I/O error ({text}); nothing was changed: check the disk and try again"
    if "unable to open" in low:
        return f"cannot open the project file ({text})"
    return f"SQLite error ({text})"


def project_file_error(path: str, exc: BaseException) -> ProjectFileError:
    """A :class:`ProjectFileError` for ``path`` worded from an ``sqlite3`` error (:func:`describe_sqlite_error`)."""
    return ProjectFileError(path, describe_sqlite_error(exc))


def remove_files(path: str) -> None:
    """Remove the SQLite file ``path`` and its journals, where they exist (a temporary file being built)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)


def link_into_place(tmp: str, path: str) -> None:
    """Give the complete file ``tmp`` its name ``path``, which must not exist (a project file is never
    overwritten): a hard link, or on file systems without them a check and a rename."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise ProjectFileError(path, "already exists; a project file is never overwritten") from None
    except OSError:
        if os.path.lexists(path):
            raise ProjectFileError(path, "already exists; a project file is never overwritten") from None
        os.replace(tmp, path)
