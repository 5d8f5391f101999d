"""The project file: one SQLite database (WAL mode) holding items, HITs, the observation log and derived state.

Design (``docs/reference/project-file.md``; ``docs/ARCHITECTURE.md``, "core/store"). :class:`Project` is the only code
that opens the file; it is assembled from parts, one module per concern:

* :mod:`core.store.db` -- the connection, transactions (``BEGIN IMMEDIATE`` ... ``COMMIT`` per public mutator;
  nested calls become savepoints) and read snapshots;
* :mod:`core.store.schema` -- tables, ``PRAGMA user_version`` and the explicit migrations;
* :mod:`core.store.hits` -- items, iterations and HITs, and :func:`~core.store.hits.choose_hits`, the one function
  that chooses HITs (batch and streaming);
* :mod:`core.store.observations` -- validating, appending and retracting observations (the append-only log);
* :mod:`core.store.replay` -- the state derived by replay: ``easl verify``, rebuild, the state per iteration;
* :mod:`core.store.state` -- the cached model arrays and their status figures;
* :mod:`core.store.output` -- estimates, ratings and :class:`~core.store.output.ProjectStatus`;
* :mod:`core.store.records` -- the front ends' records: meta, events, rejects, external ids.

pandas, SciPy and ``core.models`` are imported by the methods that need them, so that opening a project and reading
its status stays fast.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from core.errors import HyperParameterError, ProjectFileError
from core.outputs import remove_leftovers
from core.store import schema
from core.store.db import connect, now, project_file_error
from core.store.hits import insert_iteration
from core.store.output import Output
from core.store.records import FrontEndRecords
from core.store.state import save_state

if TYPE_CHECKING:
    import pandas as pd

    from core.models import Hyper, Model
    from core.tables import Table

BUILD_CACHE_KIB = 32 * 1024  # SQLite's page cache while a project file is built: 32 MiB, a small part of init's memory
SETTINGS = ("method", "hit_size", "score_min", "score_max", "seed")  # the hyper-parameters ``status`` reports


class Project(Output, FrontEndRecords):
    """An open project file. Use :meth:`create` or :meth:`open`; close with :meth:`close` or ``with``.

    Attributes
    ----------
    path : str
    hyper : core.models.Hyper
    model : core.models.Model
    n_items : int
    readonly : bool
    """

    def __init__(self, conn: sqlite3.Connection, path: str, readonly: bool) -> None:
        super().__init__(conn, path, readonly)
        meta = dict(
            conn.execute("SELECT key, value FROM meta WHERE key IN ('format', 'hyper', 'item_columns')").fetchall()
        )
        if meta.get("format") != schema.FORMAT:
            raise ProjectFileError(path, "not an easl project file (no 'format' entry in its meta table)")
        self._hyper_json = meta.get("hyper", "{}")
        self.n_items = int(conn.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM items").fetchone()[0])
        self._item_columns: list[str] = json.loads(meta.get("item_columns", "[]"))
        self._item_index: pd.Index | None = None

    @cached_property
    def hyper(self) -> Hyper:
        """The hyper-parameters recorded at ``easl init`` (``core.models.Hyper``)."""
        from core.models import Hyper

        return Hyper.from_json(self._hyper_json, source=self.path)

    @cached_property
    def model(self) -> Model:
        """The posterior model of the project's method (``core.models.get_model(hyper)``)."""
        from core.models import get_model

        return get_model(self.hyper)

    @cached_property
    def _settings(self) -> dict[str, Any]:
        """The hyper-parameters ``status`` reports, read without ``core.models`` when the file records them all."""
        raw = json.loads(self._hyper_json)
        if isinstance(raw, dict) and all(k in raw for k in SETTINGS):
            return {k: raw[k] for k in SETTINGS}
        return {k: getattr(self.hyper, k) for k in SETTINGS}

    @classmethod
    def create(cls, path: str | os.PathLike[str], items: pd.DataFrame, hyper: Hyper) -> Project:
        """Create a project file from an ``item_id, text, <extra columns>`` frame and hyper-parameters: the frame is
        the one chunk of :meth:`create_from_chunks` (bad rows are named ``items:row N``)."""
        from core.store.items import frame_chunks

        return cls.create_from_chunks(path, frame_chunks(items), hyper, id_column="item_id", text_column="text")

    @classmethod
    def create_from_chunks(
        cls,
        path: str | os.PathLike[str],
        chunks: Iterable[Table],
        hyper: Hyper,
        *,
        id_column: str = "id",
        text_column: str = "text",
    ) -> Project:
        """Create a project file from the items of ``chunks`` (e.g. ``core.tables.iter_table(file)``, ``easl init``)
        and hyper-parameters, holding one chunk in memory at a time.

        Each chunk is checked and inserted as it comes (:func:`core.store.items.insert_items`: every bad row is
        listed with its file and line, duplicate ids across chunks with both lines). The file is built under a
        temporary name in the same directory and linked into place only when complete, so any failure, a bad row
        in the last chunk included, leaves nothing behind; an existing ``path`` is never overwritten. Iteration 0
        (every item once, ``core.selection.first_iteration_hits``) needs only the item count and is created at
        once, then the prior state of the model (``Model.init_state``: a few float64 arrays of the item count).

        Raises
        ------
        ProjectFileError
            ``path`` exists or its directory does not; SQLite cannot write the file (e.g. disk full).
        InputError
            Bad items (see :func:`core.store.items.insert_items`), or the reader's errors.
        HyperParameterError
            Fewer items than the HIT size (``field="hit_size"``), or too few non-anchor items for the HITs per
            iteration (``field="hits_per_iteration"``).
        """
        path = os.fspath(path)
        if os.path.lexists(path):
            raise ProjectFileError(path, "already exists; a project file is never overwritten")
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise ProjectFileError(path, f"the directory {directory} does not exist")
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.creating")
        _remove(tmp)
        remove_leftovers(directory, f".{os.path.basename(path)}.", ".creating")  # of a killed easl init
        try:
            conn = connect(tmp, readonly=False)
            try:
                # Building a file nobody else sees: the data is consistent by construction (so no foreign-key
                # lookups, a third of the insert time at 1,000,000 items), durability comes from the fsync before
                # the file is linked into place (so no fsync per commit), and a failure discards the file (so no
                # journal: the pages are written once, not once to the WAL and again by the checkpoint).
                conn.execute("PRAGMA foreign_keys = OFF")
                conn.execute("PRAGMA synchronous = OFF")
                conn.execute("PRAGMA journal_mode = OFF").fetchone()
                conn.execute(f"PRAGMA cache_size = -{BUILD_CACHE_KIB}")
                conn.execute("BEGIN IMMEDIATE")
                schema.migrate(conn, tmp)
                _fill(conn, path, chunks, hyper, id_column, text_column)
                conn.execute("COMMIT")
                conn.execute("PRAGMA journal_mode = WAL").fetchone()  # the project file's mode, kept in the file
            finally:
                conn.close()
            _fsync(tmp)
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise ProjectFileError(path, "already exists; a project file is never overwritten") from None
            except OSError:  # file systems without hard links: check and rename
                if os.path.lexists(path):
                    raise ProjectFileError(path, "already exists; a project file is never overwritten") from None
                os.replace(tmp, path)
            _fsync(directory)
        except sqlite3.Error as exc:
            raise project_file_error(path, exc) from None
        finally:
            _remove(tmp)
        return cls.open(path)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, readonly: bool = False) -> Project:
        """Open an existing project file (migrating an older schema in one transaction unless ``readonly``).

        Raises
        ------
        ProjectFileError
            Missing file, not an SQLite file or not an easl project.
        SchemaVersionError
            Schema newer than this version, or older and ``readonly`` (a writer migrates it).
        """
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise ProjectFileError(path, "no such project file")
        try:
            conn = connect(path, readonly=readonly)
            version = schema.user_version(conn)
            if version == 0:
                conn.close()
                raise ProjectFileError(path, "not an easl project file")
            if version != schema.SCHEMA_VERSION and not (readonly and version in schema.READ_AS_IS):
                if readonly:
                    conn.close()
                    schema.check_readable(path, version)
                conn.execute("BEGIN IMMEDIATE")
                try:
                    schema.migrate(conn, path)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    conn.close()
                    raise
            return cls(conn, path, readonly)
        except sqlite3.OperationalError as exc:
            raise ProjectFileError(path, f"cannot open the project file ({exc})") from None
        except sqlite3.DatabaseError as exc:
            raise ProjectFileError(path, f"not an easl project file ({exc})") from None


def _fill(
    conn: sqlite3.Connection, path: str, chunks: Iterable[Table], hyper: Hyper, id_column: str, text_column: str
) -> None:
    """Insert the items, the meta entries, iteration 0 and the prior state into the file being built at ``path``."""
    from core import selection
    from core.models import get_model
    from core.store.items import insert_items

    items = insert_items(conn, chunks, id_column=id_column, text_column=text_column)
    n = items.n_rows
    if n < hyper.hit_size:
        raise HyperParameterError(
            "hit_size", hyper.hit_size, f"{n} items are fewer than the HIT size {hyper.hit_size}", source=path
        )
    k = hyper.hits_per_iteration
    if k is not None and hyper.partner_pool == "paper" and n - k < hyper.hit_size - 1:
        raise HyperParameterError(
            "hits_per_iteration",
            k,
            f"{k} HITs per iteration leave {n - k} non-anchor items, fewer than "
            f"the {hyper.hit_size - 1} partners each HIT needs",
            source=path,
        )
    meta = {
        "format": schema.FORMAT,
        "hyper": hyper.to_json(),
        "created_at": now(),
        "created_by": _creator(),
        "item_columns": json.dumps(items.columns),
    }
    conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", meta.items())
    # the state first: its arrays are freed whole (to the system), before iteration 0's rows are made
    model = get_model(hyper)
    state = model.init_state(n)
    save_state(conn, state, 0, model.selection_keys(state)[1])
    del state
    hits = selection.first_iteration_hits(n, hyper.hit_size, np.random.default_rng([hyper.seed, 0]))
    insert_iteration(conn, 0, np.asarray(hits, dtype=np.int64), 0)


def _fsync(path: str) -> None:
    """Flush a file (or a directory's entries) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(tmp: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(tmp + suffix):
            os.unlink(tmp + suffix)


def _creator() -> str:
    try:
        from importlib.metadata import version

        return f"easl-toolkit {version('easl-toolkit')}"
    except Exception:  # not installed as a distribution (e.g. run from a source tree)
        return "easl-toolkit"
