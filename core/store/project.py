"""The project file: one SQLite database (WAL mode) holding items, HITs, the observation log and derived state.

Design (``docs/reference/project-file.md``; ``docs/ARCHITECTURE.md``, "core/store"). :class:`Project` is the only code
that opens the file. It holds its parts, one class per concern, each given only the parts it uses: ``db``
(:class:`core.store.db.Database`), ``settings`` (:class:`core.store.settings.Settings`), ``catalog``
(:class:`core.store.items.Catalog`), ``iterations`` (:class:`core.store.hits.Iterations`), ``replay``
(:class:`core.store.derived.Replay`), ``log`` (:class:`core.store.observations.ObservationLog`), ``retractions``
(:class:`core.store.retraction.Retractions`), ``records`` (:class:`core.store.records.FrontEndRecords`) and ``output``
(:class:`core.store.views.Output`). Every operation a front end calls is also a method of the project that calls
the method of the part that does it, so that a reader (or a tool) follows a command from the project to the part.
pandas, SciPy and ``core.models`` are imported by the methods that need them, so that opening a project and reading
its status stays fast.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Self

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.errors import HyperParameterError, ProjectFileError
from easl_toolkit.core.outputs import remove_leftovers
from easl_toolkit.core.store.db import Database, connect, link_into_place, now, project_file_error, remove_files
from easl_toolkit.core.store.derived import Replay
from easl_toolkit.core.store.hit_rows import insert_iteration
from easl_toolkit.core.store.hits import Iterations
from easl_toolkit.core.store.items import Catalog
from easl_toolkit.core.store.observations import ObservationLog
from easl_toolkit.core.store.records import FrontEndRecords
from easl_toolkit.core.store.retraction import Retractions
from easl_toolkit.core.store.schema import FORMAT, READ_AS_IS, SCHEMA_VERSION, check_readable, migrate, user_version
from easl_toolkit.core.store.settings import Settings
from easl_toolkit.core.store.state import save_state
from easl_toolkit.core.store.views import Output

if TYPE_CHECKING:
    import pandas as pd

    from easl_toolkit.core.models import Hyper, Model
    from easl_toolkit.core.store.batches import IngestReport, Prepared
    from easl_toolkit.core.store.hit_columns import LongHits
    from easl_toolkit.core.store.records import Event, Reject, Wording
    from easl_toolkit.core.store.validation import Batch
    from easl_toolkit.core.store.views import EstimateTable, ProjectStatus
    from easl_toolkit.core.tables import Table

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
        n_items = int(conn.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM items").fetchone()[0])
        self.settings = settings = Settings(db, meta.get("hyper", "{}"), n_items)
        self.catalog = catalog = Catalog(db, n_items, json.loads(meta.get("item_columns", "[]")))
        self.iterations = Iterations(db, settings, catalog)
        self.replay = replay = Replay(db, settings, catalog)
        self.log = ObservationLog(db, settings, catalog, replay)
        self.retractions = Retractions(db, settings, replay)
        self.records = records = FrontEndRecords(db)
        self.output = Output(db, settings, catalog, records)
        self.n_items = n_items

    @property
    def hyper(self) -> Hyper:
        """The hyper-parameters recorded at ``easl init`` (``core.models.Hyper``)."""
        return self.settings.hyper

    @property
    def model(self) -> Model:
        """The posterior model of the project's method (``core.models.get_model(hyper)``)."""
        return self.settings.model

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.db.close()

    # the operations front ends call: each the method of the part that does it

    def transaction(self, *, max_wait_s: float | None = None) -> AbstractContextManager[None]:
        """:meth:`core.store.db.Database.transaction`."""
        return self.db.transaction(max_wait_s=max_wait_s)

    def close(self) -> None:
        """:meth:`core.store.db.Database.close`."""
        return self.db.close()

    def checkpoint(self, mode: str = "PASSIVE") -> None:
        """:meth:`core.store.db.Database.checkpoint`."""
        return self.db.checkpoint(mode)

    def set_auto_checkpoint(self, pages: int) -> None:
        """:meth:`core.store.db.Database.set_auto_checkpoint`."""
        return self.db.set_auto_checkpoint(pages)

    def set_stop_at(self, stop_at: float | None) -> float | None:
        """:meth:`core.store.settings.Settings.set_stop_at`."""
        return self.settings.set_stop_at(stop_at)

    def set_stop_width(self, width: float | None) -> float | None:
        """:meth:`core.store.settings.Settings.set_stop_width`."""
        return self.settings.set_stop_width(width)

    def items(self) -> pd.DataFrame:
        """:meth:`core.store.items.Catalog.items`."""
        return self.catalog.items()

    def item_index(self) -> pd.Index:
        """:meth:`core.store.items.Catalog.item_index`."""
        return self.catalog.item_index()

    def iteration(self) -> int:
        """:meth:`core.store.hits.Iterations.iteration`."""
        return self.iterations.iteration()

    def hits(self, iteration: int | None = None) -> list[dict[str, Any]]:
        """:meth:`core.store.hits.Iterations.hits`."""
        return self.iterations.hits(iteration)

    def open_hits(self, *, every_iteration: bool = False) -> list[dict[str, Any]]:
        """:meth:`core.store.hits.Iterations.open_hits`."""
        return self.iterations.open_hits(every_iteration=every_iteration)

    def next_hits(self) -> list[dict[str, Any]]:
        """:meth:`core.store.hits.Iterations.next_hits`."""
        return self.iterations.next_hits()

    def advance(self) -> bool:
        """:meth:`core.store.hits.Iterations.advance`."""
        return self.iterations.advance()

    def add_hits(self, hits: Any) -> list[dict[str, Any]]:
        """:meth:`core.store.hits.Iterations.add_hits`."""
        return self.iterations.add_hits(hits)

    def open_hits_long(self, *, every_iteration: bool = False) -> LongHits:
        """:meth:`core.store.hits.Iterations.open_hits_long`."""
        return self.iterations.open_hits_long(every_iteration=every_iteration)

    def open_hits_frame(self, *, every_iteration: bool = False) -> pd.DataFrame:
        """:meth:`core.store.hits.Iterations.open_hits_frame`."""
        return self.iterations.open_hits_frame(every_iteration=every_iteration)

    def next_hits_long(self) -> LongHits:
        """:meth:`core.store.hits.Iterations.next_hits_long`."""
        return self.iterations.next_hits_long()

    def next_hits_file(self, path: str | os.PathLike[str], fmt: str = "csv", *, raw_cells: bool = False) -> int:
        """:meth:`core.store.hits.Iterations.next_hits_file`."""
        return self.iterations.next_hits_file(path, fmt, raw_cells=raw_cells)

    def top_up_hits(self, n_target: int) -> int:
        """:meth:`core.store.hits.Iterations.top_up_hits`."""
        return self.iterations.top_up_hits(n_target)

    def choose_top_up(self, n_target: int) -> NDArray[Any]:
        """:meth:`core.store.hits.Iterations.choose_top_up`."""
        return self.iterations.choose_top_up(n_target)

    def open_item_mask(self) -> tuple[NDArray[Any], int]:
        """:meth:`core.store.hits.Iterations.open_item_mask`."""
        return self.iterations.open_item_mask()

    def open_hit_times(self) -> dict[str, str]:
        """:meth:`core.store.hits.Iterations.open_hit_times`."""
        return self.iterations.open_hit_times()

    def n_open_hits(self) -> int:
        """:meth:`core.store.hits.Iterations.n_open`."""
        return self.iterations.n_open()

    def state(self) -> dict[str, NDArray[Any]]:
        """:meth:`core.store.derived.Replay.state`."""
        return self.replay.state()

    def verify(self) -> dict[str, Any]:
        """:meth:`core.store.derived.Replay.verify`."""
        return self.replay.verify()

    def rebuild(self) -> dict[str, Any]:
        """:meth:`core.store.derived.Replay.rebuild`."""
        return self.replay.rebuild()

    def iteration_states(self, upto: int) -> Iterator[tuple[int, dict[str, NDArray[Any]]]]:
        """:meth:`core.store.derived.Replay.iteration_states`."""
        return self.replay.iteration_states(upto)

    def annotator_table(self) -> Any:
        """:meth:`core.store.derived.Replay.annotator_table`."""
        return self.replay.annotator_table()

    def validate(self, rows: Any, *, source: str) -> Batch:
        """:meth:`core.store.observations.ObservationLog.validate`."""
        return self.log.validate(rows, source=source)

    def prepare(self, rows: Any, *, source: str) -> Prepared:
        """:meth:`core.store.observations.ObservationLog.prepare`."""
        return self.log.prepare(rows, source=source)

    def ingest(self, rows: Any, *, source: str, skip_invalid: bool = False) -> IngestReport:
        """:meth:`core.store.observations.ObservationLog.ingest`."""
        return self.log.ingest(rows, source=source, skip_invalid=skip_invalid)

    def ingest_chunks(
        self,
        chunks: Iterable[Any],
        *,
        source: str,
        skip_invalid: bool = False,
        before_commit: Callable[[IngestReport], None] | None = None,
        defer_live: bool = False,
    ) -> IngestReport:
        """:meth:`core.store.observations.ObservationLog.ingest_chunks`."""
        return self.log.ingest_chunks(
            chunks, source=source, skip_invalid=skip_invalid, before_commit=before_commit, defer_live=defer_live
        )

    def ingest_slices(
        self,
        read: Callable[[], Iterable[Table]],
        *,
        source: str,
        rows: int,
        skip_invalid: bool = False,
        pause: Callable[[], None] | None = None,
        defer_live: bool = False,
    ) -> IngestReport:
        """:meth:`core.store.observations.ObservationLog.ingest_slices`."""
        return self.log.ingest_slices(
            read, source=source, rows=rows, skip_invalid=skip_invalid, pause=pause, defer_live=defer_live
        )

    def retract(self, annotation_ids: Iterable[Any], *, source: str) -> int:
        """:meth:`core.store.retraction.Retractions.retract`."""
        return self.retractions.retract(annotation_ids, source=source)

    def retract_hit(self, hit_id: str, *, source: str) -> int:
        """:meth:`core.store.retraction.Retractions.retract_hit`."""
        return self.retractions.retract_hit(hit_id, source=source)

    def live_versions(self, annotation_ids: Iterable[Any]) -> dict[str, str]:
        """:meth:`core.store.retraction.Retractions.live_versions`."""
        return self.retractions.live_versions(annotation_ids)

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        """:meth:`core.store.records.FrontEndRecords.get_meta`."""
        return self.records.get_meta(key, default)

    def set_meta(self, values: Mapping[str, str | None]) -> None:
        """:meth:`core.store.records.FrontEndRecords.set_meta`."""
        return self.records.set_meta(values)

    def wording(self) -> Wording:
        """:meth:`core.store.records.FrontEndRecords.wording`."""
        return self.records.wording()

    def set_wording(self, **values: str | None) -> Wording:
        """:meth:`core.store.records.FrontEndRecords.set_wording`."""
        return self.records.set_wording(**values)

    def add_events(self, events: Iterable[tuple[str, Any]], *, received_at: str | None = None) -> list[int]:
        """:meth:`core.store.records.FrontEndRecords.add_events`."""
        return self.records.add_events(events, received_at=received_at)

    def add_event(self, kind: str, payload: Any) -> int:
        """:meth:`core.store.records.FrontEndRecords.add_event`."""
        return self.records.add_event(kind, payload)

    def events(self, status: str = "pending", *, limit: int | None = None) -> list[Event]:
        """:meth:`core.store.records.FrontEndRecords.events`."""
        return self.records.events(status, limit=limit)

    def finish_event(self, event_id: int, *, failed: bool = False, note: str | None = None) -> None:
        """:meth:`core.store.records.FrontEndRecords.finish_event`."""
        return self.records.finish_event(event_id, failed=failed, note=note)

    def event_counts(self) -> dict[str, int]:
        """:meth:`core.store.records.FrontEndRecords.event_counts`."""
        return self.records.event_counts()

    def add_reject(self, *, source: str, location: str | None, reason: str, payload: Any = None) -> bool:
        """:meth:`core.store.records.FrontEndRecords.add_reject`."""
        return self.records.add_reject(source=source, location=location, reason=reason, payload=payload)

    def rejects(self, *, source: str | None = None, limit: int | None = None) -> tuple[list[Reject], int]:
        """:meth:`core.store.records.FrontEndRecords.rejects`."""
        return self.records.rejects(source=source, limit=limit)

    def map_external(self, kind: str, pairs: Iterable[tuple[object, object]]) -> None:
        """:meth:`core.store.records.FrontEndRecords.map_external`."""
        return self.records.map_external(kind, pairs)

    def unmap_external(self, kind: str, external_ids: Iterable[object]) -> None:
        """:meth:`core.store.records.FrontEndRecords.unmap_external`."""
        return self.records.unmap_external(kind, external_ids)

    def local_id(self, kind: str, external_id: object) -> str | None:
        """:meth:`core.store.records.FrontEndRecords.local_id`."""
        return self.records.local_id(kind, external_id)

    def external_map(self, kind: str) -> dict[str, str]:
        """:meth:`core.store.records.FrontEndRecords.external_map`."""
        return self.records.external_map(kind)

    def external_ids(self, kind: str, local_id: object) -> list[str]:
        """:meth:`core.store.records.FrontEndRecords.external_ids`."""
        return self.records.external_ids(kind, local_id)

    def estimates(self) -> pd.DataFrame:
        """:meth:`core.store.views.Output.estimates`."""
        return self.output.estimates()

    def estimates_table(self) -> EstimateTable:
        """:meth:`core.store.views.Output.estimates_table`."""
        return self.output.estimates_table()

    def ratings(self) -> pd.DataFrame:
        """:meth:`core.store.views.Output.ratings`."""
        return self.output.ratings()

    def status(self) -> ProjectStatus:
        """:meth:`core.store.views.Output.status`."""
        return self.output.status()

    def stop_figures(self) -> dict[str, Any] | None:
        """:meth:`core.store.views.Output.stop_figures`."""
        return self.output.stop_figures()

    def design_estimates(self, systems: NDArray[Any], names: Sequence[str]) -> dict[str, Any] | None:
        """:meth:`core.store.views.Output.design_estimates`."""
        return self.output.design_estimates(systems, names)

    @classmethod
    def create(cls, path: str | os.PathLike[str], items: pd.DataFrame, hyper: Hyper) -> Project:
        """Create a project file from an ``item_id, text, <extra columns>`` frame and hyper-parameters: the frame is
        the one chunk of :meth:`create_from_chunks` (bad rows are named ``items:row N``)."""
        from easl_toolkit.core.store.items import frame_chunks

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
        (``Model.first_iteration``, with its design if any) and the model's prior state (``Model.init_state``) are
        written too; an evaluation campaign's system columns (``hyper.systems``) go to the table ``covariates``
        (:class:`core.store.inputs.CovariateColumns`), not to the items' data.

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
    from easl_toolkit.core.models import get_model
    from easl_toolkit.core.store.inputs import CovariateColumns, save_covariates, save_design
    from easl_toolkit.core.store.items import insert_items

    systems = CovariateColumns(hyper.systems, id_column, text_column) if hyper.systems else None
    if systems is not None:  # (kept out of the items' data, which annotators see)
        chunks = systems.chunks(chunks)
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
    if systems is not None:
        save_covariates(conn, systems.names, systems.values)
    first = model.first_iteration(n, np.random.default_rng([hyper.seed, 0]))
    insert_iteration(conn, 0, np.asarray(first.hits, dtype=np.int64), 0)
    if first.design is not None:
        save_design(conn, 0, first.design)


def _fsync(path: str) -> None:
    """Flush a file (or a directory's entries) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
