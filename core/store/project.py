"""The project file: one SQLite database (WAL mode) holding items, HITs, the observation log and derived state.

Design (``docs/reference/project-file.md``; ``docs/ARCHITECTURE.md``, "core/store"). :class:`Project` is the only code
that opens the file. It holds its parts, one class per concern, each given only the parts it uses: ``db``
(:class:`core.store.db.Database`), ``settings`` (:class:`core.store.settings.Settings`), ``catalog``
(:class:`core.store.items.Catalog`), ``iterations`` (:class:`core.store.hits.Iterations`), ``replay``
(:class:`core.store.replay.Replay`), ``log`` (:class:`core.store.observations.ObservationLog`), ``retractions``
(:class:`core.store.retraction.Retractions`), ``records`` (:class:`core.store.records.FrontEndRecords`) and ``output``
(:class:`core.store.output.Output`). Every operation a front end calls is also an attribute of the project: the
method of the part that does it (``Project._bind_operations``). pandas, SciPy and ``core.models`` are imported by the
methods that need them, so that opening a project and reading its status stays fast.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from core.errors import HyperParameterError, ProjectFileError
from core.outputs import remove_leftovers
from core.store.db import Database, connect, link_into_place, now, project_file_error, remove_files
from core.store.hit_rows import insert_iteration
from core.store.hits import Iterations
from core.store.items import Catalog
from core.store.observations import ObservationLog
from core.store.output import Output
from core.store.records import FrontEndRecords
from core.store.replay import Replay
from core.store.retraction import Retractions
from core.store.schema import FORMAT, READ_AS_IS, SCHEMA_VERSION, check_readable, migrate, user_version
from core.store.settings import Settings
from core.store.state import save_state

if TYPE_CHECKING:
    import pandas as pd

    from core.models import Hyper
    from core.tables import Table

BUILD_CACHE_KIB = 32 * 1024  # SQLite's page cache while a project file is built: 32 MiB, a small part of init's memory


class Project:
    """An open project file. Use :meth:`create` or :meth:`open`; close with :meth:`close` or ``with``.

    Attributes
    ----------
    path : str
    readonly : bool
    n_items : int
    hyper : core.models.Hyper
    model : core.models.Model
    db, settings, catalog, iterations, replay, log, retractions, records, output
        The parts (the module docstring).
    """

    def __init__(self, conn: sqlite3.Connection, path: str, readonly: bool) -> None:
        meta = dict(
            conn.execute("SELECT key, value FROM meta WHERE key IN ('format', 'hyper', 'item_columns')").fetchall()
        )
        if meta.get("format") != FORMAT:
            raise ProjectFileError(path, "not an easl project file (no 'format' entry in its meta table)")
        self.path, self.readonly = path, readonly
        self.db = db = Database(conn, path, readonly)
        self.settings = settings = Settings(db, meta.get("hyper", "{}"))
        n_items = int(conn.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM items").fetchone()[0])
        self.catalog = catalog = Catalog(db, n_items, json.loads(meta.get("item_columns", "[]")))
        self.iterations = Iterations(db, settings, catalog)
        self.replay = replay = Replay(db, settings, catalog)
        self.log = ObservationLog(db, settings, catalog, replay)
        self.retractions = Retractions(db, settings, replay)
        self.records = records = FrontEndRecords(db)
        self.output = Output(db, settings, catalog, records)
        self.n_items = n_items
        self._bind_operations()

    def _bind_operations(self) -> None:
        """Make each operation front ends call an attribute of the project: the method of the part that does it."""
        db, settings, catalog, its, replay = self.db, self.settings, self.catalog, self.iterations, self.replay
        log, retractions, records, output = self.log, self.retractions, self.records, self.output
        self.transaction, self.close, self.checkpoint = db.transaction, db.close, db.checkpoint
        self.set_auto_checkpoint, self.set_stop_at = db.set_auto_checkpoint, settings.set_stop_at
        self.items, self.item_index = catalog.items, catalog.item_index
        self.iteration, self.hits, self.open_hits = its.iteration, its.hits, its.open_hits
        self.next_hits, self.advance, self.add_hits = its.next_hits, its.advance, its.add_hits
        self.open_hits_long, self.open_hits_frame = its.open_hits_long, its.open_hits_frame
        self.next_hits_long, self.next_hits_file = its.next_hits_long, its.next_hits_file
        self.top_up_hits, self.open_item_mask = its.top_up_hits, its.open_item_mask
        self.choose_top_up = its.choose_top_up
        self.open_hit_times, self.n_open_hits = its.open_hit_times, its.n_open
        self.state, self.verify, self.rebuild = replay.state, replay.verify, replay.rebuild
        self.iteration_states, self.annotator_table = replay.iteration_states, replay.annotator_table
        self.validate, self.prepare, self.ingest = log.validate, log.prepare, log.ingest
        self.ingest_chunks, self.ingest_slices = log.ingest_chunks, log.ingest_slices
        self.retract, self.retract_hit = retractions.retract, retractions.retract_hit
        self.live_versions = retractions.live_versions
        self.get_meta, self.set_meta = records.get_meta, records.set_meta
        self.wording, self.set_wording = records.wording, records.set_wording
        self.add_events, self.add_event, self.events = records.add_events, records.add_event, records.events
        self.finish_event, self.event_counts = records.finish_event, records.event_counts
        self.add_reject, self.rejects = records.add_reject, records.rejects
        self.map_external, self.unmap_external = records.map_external, records.unmap_external
        self.local_id, self.external_map = records.local_id, records.external_map
        self.external_ids = records.external_ids
        self.estimates, self.estimates_table, self.ratings = output.estimates, output.estimates_table, output.ratings
        self.status, self.stop_figures = output.status, output.stop_figures

    @property
    def hyper(self) -> Hyper:
        """The hyper-parameters recorded at ``easl init`` (``core.models.Hyper``)."""
        return self.settings.hyper

    @property
    def model(self) -> Any:
        """The posterior model of the project's method (``core.models.get_model(hyper)``)."""
        return self.settings.model

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.db.close()

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
        (``core.selection.first_iteration_hits``) and the model's prior state (``Model.init_state``) are written too.

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
        remove_files(tmp)
        remove_leftovers(directory, f".{os.path.basename(path)}.", ".creating")  # of a killed easl init
        try:
            conn = connect(tmp, readonly=False)
            try:
                # a file nobody else sees: consistent by construction, made durable by the fsync before it is linked
                # into place, discarded on failure: no foreign keys, fsync or journal (docs/studies/code-notes.md)
                conn.execute("PRAGMA foreign_keys = OFF")
                conn.execute("PRAGMA synchronous = OFF")
                conn.execute("PRAGMA journal_mode = OFF").fetchone()
                conn.execute(f"PRAGMA cache_size = -{BUILD_CACHE_KIB}")
                conn.execute("BEGIN IMMEDIATE")
                migrate(conn, tmp)
                _fill(conn, path, chunks, hyper, id_column, text_column)
                conn.execute("COMMIT")
                conn.execute("PRAGMA journal_mode = WAL").fetchone()  # the project file's mode, kept in the file
            finally:
                conn.close()
            _fsync(tmp)
            link_into_place(tmp, path)
            _fsync(directory)
        except sqlite3.Error as exc:
            raise project_file_error(path, exc) from None
        finally:
            remove_files(tmp)
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
            version = user_version(conn)
            if version == 0:
                conn.close()
                raise ProjectFileError(path, "not an easl project file")
            if version != SCHEMA_VERSION and not (readonly and version in READ_AS_IS):
                if readonly:
                    conn.close()
                    check_readable(path, version)
                conn.execute("BEGIN IMMEDIATE")
                try:
                    migrate(conn, path)
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
    try:
        from importlib.metadata import version

        creator = f"easl-toolkit {version('easl-toolkit')}"
    except Exception:  # not installed as a distribution (e.g. run from a source tree)
        creator = "easl-toolkit"
    meta = {
        "format": FORMAT,
        "hyper": hyper.to_json(),
        "created_at": now(),
        "created_by": creator,
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
