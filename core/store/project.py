"""The project file: one SQLite database (WAL mode) holding items, HITs, the observation log and derived state.

Design (DESIGN.md, "The project file"):

* Observations are append-only. Each carries a source key (:mod:`core.store.validation`): ingesting the same
  key with the same score changes nothing; a new score for a key appends a record that supersedes the old one; a
  retraction appends a ``retract`` record. The live observation of a key is its last record when that is a
  score. The ``live`` table indexes them.
* The model state (``core.models``) is derived from the live observations and cached in the ``state`` table.
  Commutative models (EASL, DA) are updated incrementally (``sign = +1`` for new scores, ``-1`` for superseded or
  retracted ones). Order-dependent models (RA, TrueSkill) apply appended submissions incrementally and are
  rebuilt by replay after a supersede or a retraction. Replay order: live observations in log order; the
  models process HIT submissions in order of first appearance (``core.models.pair_schedule``).
  :meth:`Project.verify` replays the whole log from scratch and compares.
* Every public mutating method is one transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``): it is applied whole or
  not at all, also when the process is killed. Front ends can group several calls in one transaction with
  :meth:`Project.transaction` (nested calls become savepoints).
* Iterations: iteration 0 covers every item once (``core.selection.first_iteration_hits``); iteration t >= 1 is
  selected from the state when every HIT of iteration t - 1 is complete or retracted (Algorithm 1, or the least
  annotated items for DA). The random generator of iteration t is ``numpy.random.default_rng([seed, t])``, so
  the same seed and the same observations give the same HITs, also across restarts.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import numpy as np
import pandas as pd

from core import selection
from core.errors import UserError
from core.models import Hyper, Model, get_model
from core.store import schema
from core.store.items import check_items_frame, data_json
from core.store.validation import Batch, id_strings, normalize_rows, validate

ESTIMATE_COLUMNS = ["item_id", "estimate", "mean", "variance", "ci_low", "ci_high", "n_annotations"]
RATING_COLUMNS = ["item_id", "annotator", "score", "hit_id", "iteration", "annotation_id", "created_at"]
VERIFY_TOLERANCE = 1e-9


def now() -> str:
    """The current UTC time as ISO 8601 text (microseconds, ``+00:00``)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")


@dataclass
class IngestReport:
    """What :meth:`Project.ingest` did.

    Attributes
    ----------
    n_rows : rows given.
    new : observations for keys that had no live observation.
    duplicate : rows whose key already had this very score (nothing changed), including repeats in the batch.
    superseded : rows that replaced the live score of their key with a different one.
    rejected : invalid rows (only with ``skip_invalid``; otherwise the whole batch is refused).
    rejects : DataFrame ``location, field, reason, item_id, score, hit_id, annotator, annotation_id``.
    rebuilt : True when the state was rebuilt by replay (order-dependent model after a supersede).
    """

    n_rows: int = 0
    new: int = 0
    duplicate: int = 0
    superseded: int = 0
    rejected: int = 0
    rejects: pd.DataFrame = field(default_factory=pd.DataFrame)
    rebuilt: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The counts as a JSON-ready dict."""
        return {"rows": self.n_rows, "new": self.new, "duplicate": self.duplicate, "superseded": self.superseded,
                "rejected": self.rejected, "rebuilt": self.rebuilt}


def _connect(path: str, *, readonly: bool) -> sqlite3.Connection:
    if readonly:
        uri = "file:" + os.path.abspath(path).replace("?", "%3f").replace("#", "%23") + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30.0, check_same_thread=False)
    else:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 30000")
    if not readonly:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise UserError(f"{path}: cannot switch the project file to WAL mode (got {mode!r}).")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA cache_size = -131072")  # up to 128 MiB of page cache: large batches touch many pages
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _hit_ids(iteration: int, n_hits: int) -> list[str]:
    width = len(str(max(n_hits - 1, 0)))
    return [f"it{iteration}-{j:0{width}d}" for j in range(n_hits)]


@dataclass(frozen=True)
class Prepared:
    """Annotation rows validated by :meth:`Project.prepare`, to pass to :meth:`Project.ingest`.

    Attributes
    ----------
    path : the project file they were validated against.
    name : file name or source (for messages).
    frame, locations : the normalised rows and their locations.
    batch : core.store.validation.Batch (``batch.rejects`` lists the invalid rows with reasons).
    hit_ids, fingerprint : the HITs the rows name, and which of them existed / were retracted at validation.
    """

    path: str
    name: str
    frame: pd.DataFrame
    locations: np.ndarray
    batch: Batch
    hit_ids: list[str]
    fingerprint: tuple


class Project:
    """An open project file. Use :meth:`create` or :meth:`open`; close with :meth:`close` or ``with``.

    Attributes
    ----------
    path : str
    hyper : core.models.Hyper
    model : core.models.Model
    n_items : int
    readonly : bool
    """

    # ------------------------------------------------------------------------------------------------ life cycle

    def __init__(self, conn: sqlite3.Connection, path: str, readonly: bool) -> None:
        self._conn = conn
        self.path = path
        self.readonly = readonly
        self._depth = 0
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format") != schema.FORMAT:
            raise UserError(f"{path}: not an easl project file (no 'format' entry in its meta table).")
        self.hyper: Hyper = Hyper.from_json(meta["hyper"], source=path)
        self.model: Model = get_model(self.hyper)
        self.n_items = int(conn.execute("SELECT COUNT(*) FROM items").fetchone()[0])
        self._item_columns: list[str] = json.loads(meta.get("item_columns", "[]"))
        self._item_index: pd.Index | None = None

    @classmethod
    def create(cls, path: str | os.PathLike, items: pd.DataFrame, hyper: Hyper) -> "Project":
        """Create a project file from items (``item_id, text, extra columns``) and hyper-parameters.

        The file is built under a temporary name in the same directory and linked into place only when complete,
        so a failure leaves nothing behind; an existing ``path`` is never overwritten. Iteration 0 (every item once,
        ``core.selection.first_iteration_hits``) is created at once.

        Raises
        ------
        UserError
            ``path`` exists, bad items (see :func:`core.store.items.check_items_frame`), fewer items than the
            HIT size.
        """
        path = os.fspath(path)
        if os.path.lexists(path):
            raise UserError(f"{path}: already exists; easl init never overwrites a project (choose another name "
                            f"or delete the file first).")
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise UserError(f"{path}: the directory {directory} does not exist.")
        items = check_items_frame(items)
        if len(items) < hyper.hit_size:
            raise UserError(f"{path}: {len(items)} items are fewer than the HIT size {hyper.hit_size}; give more "
                            f"items or a smaller --hit-size.")
        k = hyper.hits_per_iteration
        if k is not None and hyper.partner_pool == "paper" and len(items) - k < hyper.hit_size - 1:
            raise UserError(f"{path}: {k} HITs per iteration leave {len(items) - k} non-anchor items, fewer than "
                            f"the {hyper.hit_size - 1} partners each HIT needs; lower --hits-per-iteration.")
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.creating")
        for suffix in ("", "-wal", "-shm", "-journal"):
            if os.path.exists(tmp + suffix):
                os.unlink(tmp + suffix)
        try:
            conn = _connect(tmp, readonly=False)
            try:
                conn.execute("BEGIN IMMEDIATE")
                schema.migrate(conn, tmp)
                extra = [c for c in items.columns if c not in ("item_id", "text")]
                meta = {
                    "format": schema.FORMAT,
                    "hyper": hyper.to_json(),
                    "created_at": now(),
                    "created_by": _creator(),
                    "item_columns": json.dumps(extra),
                    "state_seq": "0",
                }
                conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", meta.items())
                conn.executemany(
                    "INSERT INTO items(idx, item_id, text, data) VALUES (?, ?, ?, ?)",
                    zip(range(len(items)), items["item_id"].tolist(), items["text"].tolist(), data_json(items)),
                )
                model = get_model(hyper)
                _save_state(conn, model.init_state(len(items)), 0)
                rng = np.random.default_rng([hyper.seed, 0])
                hits = selection.first_iteration_hits(len(items), hyper.hit_size, rng)
                _insert_iteration(conn, 0, np.asarray(hits, dtype=np.int64), 0)
                conn.execute("COMMIT")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                conn.close()
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise UserError(f"{path}: already exists; easl init never overwrites a project.") from None
            except OSError:  # file systems without hard links: check and rename
                if os.path.lexists(path):
                    raise UserError(f"{path}: already exists; easl init never overwrites a project.") from None
                os.replace(tmp, path)
        except sqlite3.Error as exc:
            raise UserError(f"{path}: cannot create the project file ({exc}).") from None
        finally:
            for suffix in ("", "-wal", "-shm", "-journal"):
                if os.path.exists(tmp + suffix):
                    os.unlink(tmp + suffix)
        return cls.open(path)

    @classmethod
    def open(cls, path: str | os.PathLike, *, readonly: bool = False) -> "Project":
        """Open an existing project file (migrating an older schema in one transaction unless ``readonly``).

        Raises
        ------
        UserError
            Missing file, not an SQLite file or not an easl project, schema newer than this version.
        """
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise UserError(f"{path}: no such project file (create one with: easl init {path} --items FILE).")
        try:
            conn = _connect(path, readonly=readonly)
            version = schema.user_version(conn)
            if version == 0:
                conn.close()
                raise UserError(f"{path}: not an easl project file.")
            if version != schema.SCHEMA_VERSION:
                if readonly:
                    if version > schema.SCHEMA_VERSION:
                        schema.migrate(conn, path)  # raises the "newer" error
                    conn.close()
                    raise UserError(f"{path}: the project file has schema version {version}; a command that "
                                    f"writes (easl next or easl ingest) migrates it to {schema.SCHEMA_VERSION}.")
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
            raise UserError(f"{path}: cannot open the project file ({exc}).") from None
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{path}: not an easl project file ({exc}).") from None

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None  # type: ignore[assignment]

    def __enter__(self) -> "Project":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def connection(self) -> sqlite3.Connection:
        """The SQLite connection (autocommit mode; use :meth:`transaction` to write)."""
        return self._conn

    # ---------------------------------------------------------------------------------------------- transactions

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Context manager for one write transaction: ``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error).

        Nested use inside an open transaction becomes a savepoint, so a front end can group several calls (e.g.
        record an event and ingest it) into one atomic unit. Yields the connection.
        """
        self._writable()
        if self._depth:
            name = f"sp{self._depth}"
            self._conn.execute(f"SAVEPOINT {name}")
            self._depth += 1
            try:
                yield self._conn
            except BaseException:
                self._conn.execute(f"ROLLBACK TO {name}")
                self._conn.execute(f"RELEASE {name}")
                raise
            else:
                self._conn.execute(f"RELEASE {name}")
            finally:
                self._depth -= 1
            return
        self._conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        else:
            self._conn.execute("COMMIT")
        finally:
            self._depth = 0

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several reads (a deferred transaction), or the caller's transaction."""
        if self._depth:
            yield self._conn
            return
        self._conn.execute("BEGIN")
        self._depth = 1
        try:
            yield self._conn
        finally:
            self._depth = 0
            self._conn.execute("COMMIT")

    def _writable(self) -> None:
        if self.readonly:
            raise UserError(f"{self.path}: the project is open read-only.")

    # ------------------------------------------------------------------------------------------------ meta etc.

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        """The text value of a ``meta`` key, or ``default``."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        """Set a free ``meta`` key (front ends: e.g. ``ls.last_reconciliation``); one transaction."""
        if key in ("format", "hyper", "item_columns", "state_seq"):
            raise UserError(f"meta key {key!r} is managed by the project and cannot be set.")
        with self.transaction() as conn:
            conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                         "value = excluded.value", (key, str(value)))

    def add_event(self, kind: str, payload: Any) -> int:
        """Append an event to the durable queue (status ``pending``); returns its id. ``payload`` is JSON-encoded
        unless it is already a string."""
        text = payload if isinstance(payload, str) else json.dumps(payload)
        with self.transaction() as conn:
            cur = conn.execute("INSERT INTO events(received_at, kind, payload) VALUES (?, ?, ?)", (now(), kind, text))
            return int(cur.lastrowid)

    def pending_events(self, limit: int = 100) -> list[dict]:
        """The oldest pending events: dicts with ``id, received_at, kind, payload`` (payload as stored text)."""
        rows = self._conn.execute("SELECT id, received_at, kind, payload FROM events WHERE status = 'pending' "
                                  "ORDER BY id LIMIT ?", (int(limit),)).fetchall()
        return [dict(zip(("id", "received_at", "kind", "payload"), r)) for r in rows]

    def finish_event(self, event_id: int, *, error: str | None = None) -> None:
        """Mark an event ``done`` (or ``failed`` with ``error``) and stamp ``processed_at``; one transaction."""
        with self.transaction() as conn:
            conn.execute("UPDATE events SET status = ?, error = ?, processed_at = ? WHERE id = ?",
                         ("failed" if error else "done", error, now(), int(event_id)))

    def add_reject(self, *, source: str, location: str | None, reason: str, payload: Any = None) -> None:
        """Record a rejected input (e.g. a Label Studio annotation that failed validation); one transaction."""
        text = payload if payload is None or isinstance(payload, str) else json.dumps(payload, default=str)
        with self.transaction() as conn:
            conn.execute("INSERT INTO rejects(created_at, source, location, reason, payload) VALUES (?, ?, ?, ?, ?)",
                         (now(), source, location, reason, text))

    def rejects(self, *, source: str | None = None, limit: int | None = None) -> tuple[list[dict], int]:
        """Rejected inputs with their reasons: ``(records, total)``.

        ``records`` are the most recent ``limit`` rejects (all when None) of ``source`` (every source when None),
        oldest first, each ``{"id", "created_at", "source", "location", "reason"}``; ``total`` counts every reject
        of that source, so ``total - len(records)`` were left out.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"rejects: limit must be >= 0, got {limit}.")
        where, params = ("WHERE source = ?", (source,)) if source is not None else ("", ())
        with self._reading() as conn:
            total = int(conn.execute(f"SELECT COUNT(*) FROM rejects {where}", params).fetchone()[0])
            rows = conn.execute(f"SELECT id, created_at, source, location, reason FROM rejects {where} "
                                f"ORDER BY id DESC LIMIT ?", params + (-1 if limit is None else int(limit),)).fetchall()
        return ([{"id": int(r[0]), "created_at": r[1], "source": r[2], "location": r[3], "reason": r[4]}
                 for r in reversed(rows)], total)

    def map_external(self, kind: str, external_id: str, local_id: str) -> None:
        """Record ``external_id`` (of an outside system, e.g. a Label Studio task id) for ``local_id``;
        idempotent; an external id already mapped to another local id raises UserError."""
        with self.transaction() as conn:
            row = conn.execute("SELECT local_id FROM external_ids WHERE kind = ? AND external_id = ?",
                               (kind, str(external_id))).fetchone()
            if row is not None and row[0] != str(local_id):
                raise UserError(f"{self.path}: {kind} {external_id!r} is already mapped to {row[0]!r}, "
                                f"not {local_id!r}.")
            if row is None:
                conn.execute("INSERT INTO external_ids(kind, external_id, local_id) VALUES (?, ?, ?)",
                             (kind, str(external_id), str(local_id)))

    def local_id(self, kind: str, external_id: str) -> str | None:
        """The local id mapped to ``(kind, external_id)``, or None."""
        row = self._conn.execute("SELECT local_id FROM external_ids WHERE kind = ? AND external_id = ?",
                                 (kind, str(external_id))).fetchone()
        return None if row is None else row[0]

    def external_ids(self, kind: str, local_id: str) -> list[str]:
        """Every external id of ``kind`` mapped to ``local_id``."""
        rows = self._conn.execute("SELECT external_id FROM external_ids WHERE kind = ? AND local_id = ? "
                                  "ORDER BY rowid", (kind, str(local_id))).fetchall()
        return [r[0] for r in rows]

    def set_hit_external_id(self, hit_id: str, external_id: str | None) -> None:
        """Store the outside id of a HIT (e.g. its Label Studio task id) in ``hits.external_id``."""
        with self.transaction() as conn:
            cur = conn.execute("UPDATE hits SET external_id = ? WHERE hit_id = ?", (external_id, hit_id))
            if cur.rowcount == 0:
                raise UserError(f"{self.path}: unknown HIT {hit_id!r}.")

    # ---------------------------------------------------------------------------------------------------- items

    def item_index(self) -> pd.Index:
        """The item ids in index order (position = the item's index in the model arrays)."""
        if self._item_index is None:
            ids = [r[0] for r in self._conn.execute("SELECT item_id FROM items ORDER BY idx")]
            self._item_index = pd.Index(ids, dtype=object)
        return self._item_index

    def items(self) -> pd.DataFrame:
        """All items: ``item_id, text`` and the extra columns of the items file, in index order."""
        # the JSON column is read only when the items file had extra columns (a third of the reading time)
        columns = "item_id, text, data" if self._item_columns else "item_id, text"
        rows = self._conn.execute(f"SELECT {columns} FROM items ORDER BY idx").fetchall()
        frame = pd.DataFrame({"item_id": [r[0] for r in rows], "text": [r[1] for r in rows]}, dtype=object)
        if self._item_columns:
            # one JSON array parsed at once: several times faster than a json.loads per item
            records = json.loads("[" + ",".join(r[2] for r in rows) + "]")
            data = pd.DataFrame.from_records(records, columns=self._item_columns)
            frame = pd.concat([frame, data], axis=1)
        return frame

    # ---------------------------------------------------------------------------------------------------- state

    def state(self) -> dict[str, np.ndarray]:
        """The cached model state (arrays per item, on the unit scale; see ``core.models``)."""
        return _load_state(self._conn)

    def iteration(self) -> int:
        """The current iteration (0 = the covering iteration)."""
        return int(self._conn.execute("SELECT COALESCE(MAX(iteration), 0) FROM iterations").fetchone()[0])

    def _hit_records(self, conn: sqlite3.Connection, where: str, params: tuple) -> list[dict]:
        rows = conn.execute(
            "SELECT h.hit_id, h.iteration, i.item_id, i.text, i.data FROM hits h "
            "JOIN hit_items hi ON hi.hit_id = h.hit_id JOIN items i ON i.idx = hi.item_idx "
            f"WHERE {where} ORDER BY h.rowid, hi.position", params).fetchall()
        records: list[dict] = []
        current: dict | None = None
        loads = json.loads
        for hit_id, iteration, item_id, text, data in rows:
            if current is None or current["hit_id"] != hit_id:
                current = {"hit_id": hit_id, "iteration": int(iteration), "items": []}
                records.append(current)
            entry = {"item_id": item_id, "text": text}
            if data != "{}":
                for k, v in loads(data).items():
                    entry.setdefault(k, v)
            current["items"].append(entry)
        return records

    def open_hits(self) -> list[dict]:
        """HIT records of the current iteration that are not complete (DESIGN.md: ``hit_id, iteration, items``;
        each item has ``item_id``, ``text`` and the item's extra columns)."""
        with self._reading() as conn:
            it = self.iteration()
            return self._hit_records(conn, "h.iteration = ? AND h.status = 'open'", (it,))

    def hits(self, iteration: int | None = None) -> list[dict]:
        """HIT records of an iteration (default: the current one), whatever their status, with ``status``."""
        with self._reading() as conn:
            it = self.iteration() if iteration is None else int(iteration)
            records = self._hit_records(conn, "h.iteration = ?", (it,))
            status = dict(conn.execute("SELECT hit_id, status FROM hits WHERE iteration = ?", (it,)).fetchall())
        for r in records:
            r["status"] = status[r["hit_id"]]
        return records

    def next_hits(self) -> list[dict]:
        """The open HITs of the current iteration; if there are none (every HIT complete or retracted), start the
        next iteration first (one transaction) and return its HITs.

        Iteration t's HITs: Algorithm 1 on ``model.selection_keys(state)`` (``core.selection.select_hits`` with
        ``k = hits_per_iteration or N // n``), or ``select_least_annotated`` on the counts for DA; the generator is
        ``default_rng([seed, t])``.
        """
        with self.transaction() as conn:
            it = self.iteration()
            n_open = conn.execute("SELECT COUNT(*) FROM hits WHERE iteration = ? AND status = 'open'",
                                  (it,)).fetchone()[0]
            if n_open == 0:
                self._start_iteration(conn, it + 1)
            return self.open_hits()

    def _start_iteration(self, conn: sqlite3.Connection, iteration: int) -> None:
        hyper = self.hyper
        rng = np.random.default_rng([hyper.seed, iteration])
        k = hyper.hits_per_iteration or max(1, self.n_items // hyper.hit_size)
        state = _load_state(conn)
        if hyper.method == "da":
            hits = selection.select_least_annotated(state["count"], hit_size=hyper.hit_size, n_hits=k, rng=rng)
        else:
            location, variance = self.model.selection_keys(state)
            hits = selection.select_hits(location, variance, hit_size=hyper.hit_size, n_hits=k, gamma=hyper.gamma,
                                         pool=hyper.partner_pool, rng=rng)
        _insert_iteration(conn, iteration, np.asarray(hits, dtype=np.int64), _max_seq(conn))

    def add_hits(self, hits) -> list[dict]:
        """Record HITs chosen outside :meth:`next_hits` (e.g. the Label Studio plugin's streaming top-ups, which
        run Algorithm 1 of Sakaguchi & Van Durme 2018 with one anchor at a time) as a new iteration.

        The new iteration is ``t = iteration() + 1``; its HITs get the ids ``it{t}-{j}`` like those of
        :meth:`next_hits`, are ``open``, and count toward completion, validation and ``easl verify`` as usual.
        One transaction (joins the caller's :meth:`transaction`, so a caller can read the state, select and add
        atomically).

        Parameters
        ----------
        hits : array-like of int, shape (n_hits, width)
            Item positions in model-array order (:meth:`item_index`), one row per HIT, as
            ``core.selection.select_hits`` returns them; ``1 <= width <= hit_size``.

        Returns
        -------
        list of dict
            The new HIT records (``hit_id, iteration, items``), in row order; empty (and no iteration started)
            when ``hits`` has no rows.

        Raises
        ------
        ValueError
            ``hits`` is not a 2-d integer array of width 1..hit_size, an index is out of range, an item repeats
            within the given HITs, or an item is already in an open HIT (of any iteration): no item may be in two
            open HITs.
        """
        self._writable()
        arr = np.asarray(hits)
        if arr.ndim != 2 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            raise ValueError(f"add_hits: hits must be a 2-d integer array (n_hits, width), got shape {arr.shape} "
                             f"and dtype {arr.dtype}.")
        arr = arr.astype(np.int64, copy=False)
        if arr.shape[0] == 0:
            return []
        if not 1 <= arr.shape[1] <= self.hyper.hit_size:
            raise ValueError(f"add_hits: HIT width {arr.shape[1]} is outside 1..hit_size ({self.hyper.hit_size}).")
        flat = arr.reshape(-1)
        if flat.min() < 0 or flat.max() >= self.n_items:
            raise ValueError(f"add_hits: item positions must lie in 0..{self.n_items - 1}.")
        uniq, counts = np.unique(flat, return_counts=True)
        if (counts > 1).any():
            raise ValueError(f"add_hits: item position {int(uniq[counts > 1][0])} appears more than once in the "
                             f"given HITs.")
        with self.transaction() as conn:
            _fill_temp(conn, "_new_items", flat.tolist())
            clash = conn.execute(
                "SELECT hi.item_idx, h.hit_id FROM hit_items hi JOIN hits h ON h.hit_id = hi.hit_id "
                "WHERE h.status = 'open' AND hi.item_idx IN (SELECT v FROM temp._new_items) LIMIT 1").fetchone()
            if clash is not None:
                raise ValueError(f"add_hits: item position {clash[0]} is already in the open HIT {clash[1]!r}; no "
                                 f"item may be in two open HITs.")
            iteration = self.iteration() + 1
            _insert_iteration(conn, iteration, arr, _max_seq(conn))
            return self._hit_records(conn, "h.iteration = ?", (iteration,))

    # --------------------------------------------------------------------------------------------------- ingest

    def _hits_frame(self, conn: sqlite3.Connection, hit_ids: Iterable[str]) -> pd.DataFrame:
        ids = sorted({h for h in hit_ids if h is not None})
        if not ids:
            return pd.DataFrame({"hit_id": pd.Series([], dtype=object), "status": pd.Series([], dtype=object),
                                 "item_idx": pd.Series([], dtype=np.int64)})
        _fill_temp(conn, "_hit_ids", ids)
        rows = conn.execute("SELECT h.hit_id, h.status, hi.item_idx FROM hits h JOIN hit_items hi "
                            "ON hi.hit_id = h.hit_id WHERE h.hit_id IN (SELECT v FROM temp._hit_ids) "
                            "ORDER BY h.hit_id, hi.position").fetchall()
        return pd.DataFrame({"hit_id": pd.Series([r[0] for r in rows], dtype=object),
                             "status": pd.Series([r[1] for r in rows], dtype=object),
                             "item_idx": np.asarray([r[2] for r in rows], dtype=np.int64)})

    def validate(self, rows, *, source: str) -> Batch:
        """Validate annotation rows without writing anything (see :mod:`core.store.validation`)."""
        frame, locations, _ = normalize_rows(rows, source)
        with self._reading() as conn:
            return self._validate(conn, frame, locations)

    def prepare(self, rows, *, source: str) -> "Prepared":
        """Validate annotation rows under a read snapshot, outside any write transaction, for a later
        :meth:`ingest` (which then skips validation if the HITs the rows name are as they were).

        Validation depends on the project only through the item ids (fixed), the items of each HIT (fixed) and
        which of the named HITs exist and which are retracted; :meth:`ingest` re-reads those inside its
        transaction and validates again if they changed, so the result is the same as ``ingest(rows)``. A front
        end that serialises writers (the Label Studio worker) thus holds the write lock for the append only.
        """
        frame, locations, name = normalize_rows(rows, source)
        hit_ids = _named_hits(frame)
        with self._reading() as conn:
            batch = self._validate(conn, frame, locations, hit_ids)
            fingerprint = _hit_fingerprint(conn, hit_ids)
        return Prepared(path=self.path, name=name, frame=frame, locations=locations, batch=batch,
                        hit_ids=hit_ids, fingerprint=fingerprint)

    def _validate(self, conn, frame, locations, hit_ids: list[str] | None = None) -> Batch:
        hits = self._hits_frame(conn, _named_hits(frame) if hit_ids is None else hit_ids)
        return validate(frame, locations, item_index=self.item_index(), hits=hits,
                        score_min=self.hyper.score_min, score_max=self.hyper.score_max,
                        needs_whole_hit=self.model.needs_whole_hit, method=self.hyper.method)

    def ingest(self, rows, *, source: str, skip_invalid: bool = False) -> IngestReport:
        """Validate and append annotation rows in one transaction.

        Parameters
        ----------
        rows : core.tables.Table, DataFrame, list of dicts, or Prepared
            ``item_id``, ``score`` (on the project's score range) and optional ``hit_id``, ``annotator``,
            ``annotation_id``, ``created_at``, ``location``; or the result of :meth:`prepare` on this project
            (validated already; validated again only if a HIT it names was created or retracted since).
        source : str
            Where the rows come from (a file name, ``"labelstudio"``); stored with each observation.
        skip_invalid : bool
            Ingest the valid rows and return the rejects (also recorded in the ``rejects`` table) instead of
            refusing the whole batch.

        Returns
        -------
        IngestReport

        Raises
        ------
        UserError
            Some row is invalid and ``skip_invalid`` is False: the message lists every bad row as
            ``file:line: field: reason``; nothing is written.
        """
        prepared = rows if isinstance(rows, Prepared) else None
        if prepared is not None:
            if prepared.path != self.path:
                raise ValueError(f"ingest: rows prepared for {prepared.path}, not {self.path}.")
            frame, locations, name = prepared.frame, prepared.locations, prepared.name
        else:
            frame, locations, name = normalize_rows(rows, source)
        report = IngestReport(n_rows=len(frame))
        with self.transaction() as conn:
            if prepared is not None and _hit_fingerprint(conn, prepared.hit_ids) == prepared.fingerprint:
                batch = prepared.batch
            else:
                batch = self._validate(conn, frame, locations)
            report.rejects = batch.rejects
            report.rejected = len(batch.rejects)
            if report.rejected and not skip_invalid:
                raise UserError(
                    f"{name}: {report.rejected} of {len(frame)} rows are invalid, so nothing was ingested (use "
                    f"--skip-invalid to ingest the valid rows and write the rejects to a file):\n  "
                    + "\n  ".join(batch.messages))
            if report.rejected:
                stamp = now()
                payload = batch.rejects[["item_id", "score", "hit_id", "annotator", "annotation_id"]].to_json(
                    orient="records", lines=True, force_ascii=False, default_handler=str).splitlines()
                conn.executemany("INSERT INTO rejects(created_at, source, location, reason, payload) "
                                 "VALUES (?, ?, ?, ?, ?)",
                                 zip([stamp] * report.rejected, [source] * report.rejected,
                                     batch.rejects["location"].tolist(),
                                     (batch.rejects["field"] + ": " + batch.rejects["reason"]).tolist(), payload))
            self._append(conn, batch.valid, source, report)
        return report

    def _append(self, conn: sqlite3.Connection, valid: pd.DataFrame, source: str, report: IngestReport) -> None:
        report.duplicate = int(valid["repeat"].sum())
        cand = valid[~valid["repeat"].to_numpy()].reset_index(drop=True)
        if len(cand) == 0:
            return
        # the live observation of each key, if any
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS _keys (source_key TEXT NOT NULL, pos INTEGER NOT NULL)")
        conn.execute("DELETE FROM temp._keys")
        # keys in sorted order: the index lookups and inserts below then walk the B-trees in order (far fewer page
        # reads than random order once the live index outgrows the page cache)
        by_key = np.argsort(cand["source_key"].to_numpy(dtype=object), kind="stable")
        conn.executemany("INSERT INTO temp._keys(source_key, pos) VALUES (?, ?)",
                         zip(cand["source_key"].to_numpy(dtype=object)[by_key].tolist(), by_key.tolist()))
        found = conn.execute("SELECT k.pos, l.score_raw, l.score01, l.item_idx, l.hit_id FROM temp._keys k "
                             "JOIN live l ON l.source_key = k.source_key").fetchall()
        pos = np.asarray([r[0] for r in found], dtype=np.int64)
        old_raw = np.asarray([r[1] for r in found], dtype=np.float64)
        old01 = np.asarray([r[2] for r in found], dtype=np.float64)
        old_item = np.asarray([r[3] for r in found], dtype=np.int64)
        same = old_raw == cand["score_raw"].to_numpy()[pos]
        report.duplicate += int(same.sum())
        report.superseded = int((~same).sum())
        keep = np.ones(len(cand), dtype=bool)
        keep[pos[same]] = False
        add = cand[keep].reset_index(drop=True)
        report.new = len(add) - report.superseded
        if len(add) == 0:
            return
        # order-dependent models: appending whole new submissions at the end of the log is incremental
        group_seen = False
        if self.model.order_dependent and report.superseded == 0:
            # such methods require a hit_id, so a submission's earlier rows are found through the live_hit index
            pairs = add[["hit_id", "group_key"]].drop_duplicates()
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS _groups (hit_id TEXT, group_key TEXT)")
            conn.execute("DELETE FROM temp._groups")
            conn.executemany("INSERT INTO temp._groups(hit_id, group_key) VALUES (?, ?)",
                             zip(pairs["hit_id"].tolist(), pairs["group_key"].tolist()))
            group_seen = conn.execute("SELECT EXISTS (SELECT 1 FROM temp._groups g JOIN live l ON "
                                      "l.hit_id = g.hit_id AND l.group_key = g.group_key)").fetchone()[0] == 1
        seq0 = _max_seq(conn) + 1
        seqs = np.arange(seq0, seq0 + len(add), dtype=np.int64)
        stamp = now()
        created = add["created_at"].where(add["created_at"].notna(), stamp).tolist()
        conn.executemany(
            "INSERT INTO observations(seq, source_key, kind, item_idx, score01, score_raw, hit_id, annotator, "
            "annotation_id, group_key, created_at, source) VALUES (?, ?, 'score', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            zip(seqs.tolist(), add["source_key"].tolist(), add["item_idx"].tolist(), add["score01"].tolist(),
                add["score_raw"].tolist(), add["hit_id"].tolist(), add["annotator"].tolist(),
                add["annotation_id"].tolist(), add["group_key"].tolist(), created, [source] * len(add)))
        if same.any():  # keys live with this very score stay as they are
            conn.execute("DELETE FROM temp._keys WHERE pos IN (SELECT value FROM json_each(?))",
                         (json.dumps(pos[same].tolist()),))
        conn.execute("DELETE FROM live WHERE source_key IN (SELECT source_key FROM temp._keys)")
        o = np.argsort(add["source_key"].to_numpy(dtype=object), kind="stable")  # in key order (see above)
        conn.executemany(
            "INSERT INTO live(source_key, seq, item_idx, score01, score_raw, hit_id, annotation_id, group_key) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            zip(*(np.asarray(col, dtype=object)[o].tolist() for col in (
                add["source_key"].to_numpy(dtype=object), seqs, add["item_idx"].to_numpy(), add["score01"].to_numpy(),
                add["score_raw"].to_numpy(), add["hit_id"].to_numpy(dtype=object),
                add["annotation_id"].to_numpy(dtype=object), add["group_key"].to_numpy(dtype=object)))))
        # model state
        items = add["item_idx"].to_numpy(dtype=np.int64)
        s01 = add["score01"].to_numpy(dtype=np.float64)
        groups = pd.factorize(add["group_key"])[0].astype(np.int64)
        if self.model.order_dependent:
            if report.superseded or group_seen:
                state = self._replay(conn)[0]
                report.rebuilt = True
            else:
                state = _load_state(conn)
                self.model.apply(state, items, s01, groups)
        else:
            state = _load_state(conn)
            if report.superseded:
                sup = ~same
                self.model.apply(state, old_item[sup], old01[sup], np.zeros(int(sup.sum()), dtype=np.int64), sign=-1)
            self.model.apply(state, items, s01, groups)
        _save_state(conn, state, int(seqs[-1]))
        old_hits = {r[4] for r, dup in zip(found, same.tolist()) if not dup and r[4] is not None}
        _refresh_hits(conn, sorted(set(add["hit_id"].dropna().tolist()) | old_hits))

    # -------------------------------------------------------------------------------------------------- retract

    def retract(self, annotation_ids: Iterable[Any], *, source: str) -> int:
        """Retract every live observation of the given annotation ids (e.g. deleted Label Studio annotations).

        Appends one ``retract`` record per observation; commutative models subtract (``sign = -1``), order-dependent
        ones are rebuilt by replay. One transaction. Returns the number of observations retracted (0 when none
        were live: retracting twice changes nothing).
        """
        ids = sorted({str(a).strip() for a in annotation_ids if a is not None and str(a).strip()})
        if not ids:
            return 0
        with self.transaction() as conn:
            _fill_temp(conn, "_ann_ids", ids)
            return self._retract_where(conn, "l.annotation_id IN (SELECT v FROM temp._ann_ids)", (), source)

    def retract_hit(self, hit_id: str, *, source: str) -> int:
        """Withdraw a HIT (e.g. its Label Studio task was deleted): retract its live observations and mark it
        ``retracted`` so that it no longer counts toward the completion of its iteration. One transaction.
        Returns the number of observations retracted."""
        with self.transaction() as conn:
            row = conn.execute("SELECT status FROM hits WHERE hit_id = ?", (hit_id,)).fetchone()
            if row is None:
                raise UserError(f"{self.path}: unknown HIT {hit_id!r}.")
            n = self._retract_where(conn, "l.hit_id = ?", (hit_id,), source)
            conn.execute("UPDATE hits SET status = 'retracted' WHERE hit_id = ?", (hit_id,))
            return n

    def _retract_where(self, conn: sqlite3.Connection, where: str, params: tuple, source: str) -> int:
        rows = conn.execute(f"SELECT l.source_key, l.item_idx, l.score01, l.hit_id FROM live l WHERE {where} "
                            f"ORDER BY l.seq", params).fetchall()
        if not rows:
            return 0
        stamp = now()
        seq0 = _max_seq(conn) + 1
        conn.execute(
            "INSERT INTO observations(seq, source_key, kind, item_idx, score01, score_raw, hit_id, annotator, "
            "annotation_id, group_key, created_at, source) "
            f"SELECT ? + ROW_NUMBER() OVER (ORDER BY l.seq) - 1, o.source_key, 'retract', o.item_idx, NULL, NULL, "
            f"o.hit_id, o.annotator, o.annotation_id, o.group_key, ?, ? FROM live l JOIN observations o "
            f"ON o.seq = l.seq WHERE {where} ORDER BY l.seq", (seq0, stamp, source) + params)
        conn.execute(f"DELETE FROM live WHERE source_key IN (SELECT l.source_key FROM live l WHERE {where})", params)
        item = np.asarray([r[1] for r in rows], dtype=np.int64)
        s01 = np.asarray([r[2] for r in rows], dtype=np.float64)
        if self.model.order_dependent:
            state = self._replay(conn)[0]
        else:
            state = _load_state(conn)
            self.model.apply(state, item, s01, np.zeros(item.size, dtype=np.int64), sign=-1)
        _save_state(conn, state, _max_seq(conn))
        _refresh_hits(conn, sorted({r[3] for r in rows if r[3] is not None}))
        return len(rows)

    # --------------------------------------------------------------------------------------------------- replay

    def _replay(self, conn: sqlite3.Connection) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Rebuild the state from the whole log: the last record of each source key, if a score, is live; live
        observations are applied in log order. Returns ``(state, live seqs)``."""
        rows = conn.execute("SELECT seq, source_key, kind = 'score', item_idx, score01, group_key "
                            "FROM observations ORDER BY seq").fetchall()
        state = self.model.init_state(self.n_items)
        if not rows:
            return state, np.zeros(0, dtype=np.int64)
        seq, key, is_score, item, s01, group = zip(*rows)
        last = ~pd.Series(key, dtype=object).duplicated(keep="last").to_numpy()
        live = last & np.asarray(is_score, dtype=bool)
        idx = np.flatnonzero(live)
        item_a = np.asarray(item, dtype=np.int64)[idx]
        s01_a = np.asarray([s01[i] for i in idx.tolist()], dtype=np.float64)
        groups = pd.factorize(pd.Series([group[i] for i in idx.tolist()], dtype=object))[0].astype(np.int64)
        self.model.apply(state, item_a, s01_a, groups)
        return state, np.asarray(seq, dtype=np.int64)[idx]

    def rebuild(self) -> dict[str, Any]:
        """Replace the cached state by a replay of the log (repairs a cache that :meth:`verify` found wrong);
        one transaction. Returns :meth:`verify`'s result after the rebuild."""
        with self.transaction() as conn:
            state, _ = self._replay(conn)
            _save_state(conn, state, _max_seq(conn))
            conn.execute("DELETE FROM live")
            conn.execute(
                "INSERT INTO live(source_key, seq, item_idx, score01, score_raw, hit_id, annotation_id, group_key) "
                "SELECT o.source_key, o.seq, o.item_idx, o.score01, o.score_raw, o.hit_id, o.annotation_id, "
                "o.group_key FROM observations o JOIN (SELECT source_key, MAX(seq) AS seq FROM observations "
                "GROUP BY source_key) m ON m.seq = o.seq WHERE o.kind = 'score'")
            _refresh_hits(conn, None)
        return self.verify()

    def verify(self) -> dict[str, Any]:
        """Replay the whole log from scratch and compare with the cache.

        Returns
        -------
        dict
            ``ok`` (every check passes), ``max_abs_diff`` (largest absolute difference between the cached and the
            replayed arrays; ok within 1e-9), ``arrays`` (difference per array), ``live_ok`` (the live index equals
            the log's last score per key), ``hits_ok`` (HIT statuses agree with the live observations),
            ``seq_ok`` (the cache reflects the end of the log), ``n_observations``, ``n_log_records``.
        """
        with self._reading() as conn:
            replay, live_seqs = self._replay(conn)
            cache = _load_state(conn)
            table_seqs = np.sort(np.asarray([r[0] for r in conn.execute("SELECT seq FROM live")], dtype=np.int64))
            max_seq = _max_seq(conn)
            state_seq = int(conn.execute("SELECT value FROM meta WHERE key = 'state_seq'").fetchone()[0])
            bad_hits = conn.execute(f"SELECT COUNT(*) FROM hits WHERE status != 'retracted' AND status != "
                                    f"({_STATUS_SQL})").fetchone()[0]
        arrays: dict[str, float] = {}
        for name in sorted(set(replay) | set(cache)):
            a, b = replay.get(name), cache.get(name)
            if a is None or b is None or a.shape != b.shape:
                arrays[name] = float("inf")
                continue
            both_nan = np.isnan(a) & np.isnan(b)
            diff = np.where(both_nan, 0.0, np.abs(a - b))
            arrays[name] = float(np.nan_to_num(diff, nan=np.inf).max()) if diff.size else 0.0
        max_diff = max(arrays.values()) if arrays else 0.0
        live_ok = bool(np.array_equal(np.sort(live_seqs), table_seqs))
        seq_ok = state_seq == max_seq
        hits_ok = bad_hits == 0
        return {"ok": bool(max_diff <= VERIFY_TOLERANCE and live_ok and seq_ok and hits_ok),
                "max_abs_diff": max_diff, "tolerance": VERIFY_TOLERANCE, "arrays": arrays, "live_ok": live_ok,
                "seq_ok": seq_ok, "hits_ok": hits_ok, "n_observations": int(live_seqs.size),
                "n_log_records": max_seq, "method": self.hyper.method}

    # --------------------------------------------------------------------------------------------------- output

    def estimates(self) -> pd.DataFrame:
        """One row per item: ``item_id, estimate, mean, variance, ci_low, ci_high, n_annotations``, then ``text``
        and the item's extra columns (renamed ``item_<name>`` if they clash).

        On the project's score range: locations ``x`` become ``score_min + x (score_max - score_min)`` and the
        variance is multiplied by ``(score_max - score_min)^2`` (``Hyper.from_unit``, ``variance_from_unit``).
        ``n_annotations`` counts live observations.
        """
        with self._reading() as conn:
            state = _load_state(conn)
            items = self.items()
        summ = self.model.summary(state)
        h = self.hyper
        out = pd.DataFrame({
            "item_id": items["item_id"].to_numpy(dtype=object),
            "estimate": h.from_unit(summ["estimate"]),
            "mean": h.from_unit(summ["mean"]),
            "variance": h.variance_from_unit(summ["variance"]),
            "ci_low": h.from_unit(summ["ci_low"]),
            "ci_high": h.from_unit(summ["ci_high"]),
            "n_annotations": np.rint(state["count"]).astype(np.int64),
        })
        data = items.drop(columns=["item_id"])
        data.columns = [f"item_{c}" if c in ESTIMATE_COLUMNS else c for c in data.columns]
        return pd.concat([out, data.reset_index(drop=True)], axis=1)

    def ratings(self) -> pd.DataFrame:
        """Live observations in long form, in log order: ``item_id, annotator, score, hit_id, iteration,
        annotation_id, created_at`` (score on the project's range, as given)."""
        rows = self._conn.execute(
            "SELECT i.item_id, o.annotator, o.score_raw, o.hit_id, h.iteration, o.annotation_id, o.created_at "
            "FROM live l JOIN observations o ON o.seq = l.seq JOIN items i ON i.idx = l.item_idx "
            "LEFT JOIN hits h ON h.hit_id = o.hit_id ORDER BY l.seq").fetchall()
        cols = list(zip(*rows)) if rows else [()] * len(RATING_COLUMNS)
        frame = pd.DataFrame({c: pd.Series(list(v), dtype=object) for c, v in zip(RATING_COLUMNS, cols)})
        frame["score"] = frame["score"].astype(np.float64)
        frame["iteration"] = pd.array(frame["iteration"].tolist(), dtype="Int64")
        return frame

    def status(self) -> dict[str, Any]:
        """Figures for ``easl status`` and front ends.

        Keys: ``iteration, n_items, n_observations`` (live scores), ``n_log_records, n_hits_total, n_hits_open``
        (current iteration), ``n_hits_complete, n_hits_retracted, mean_variance, max_variance`` (posterior
        variances on the unit scale [0, 1], as the models hold them), ``variance_scale``, ``n_annotations``
        (min / mean / max per item), ``events`` (count per status), ``n_rejects``, ``last_reconciliation``
        (meta key ``ls.last_reconciliation``), ``method, hit_size, score_range, seed, schema_version, path``.
        A figure that is not a finite number is null with a ``<key>_reason`` beside it. The variances come from
        ``Model.selection_keys(state)`` (the summary's ``variance``, e.g. eq 13 for EASL, without its intervals).
        """
        with self._reading() as conn:
            it = self.iteration()
            # one index range count per status: about half the time of a GROUP BY over the iteration's HITs
            counts = dict(zip(("open", "complete", "retracted"), conn.execute(
                "SELECT (SELECT COUNT(*) FROM hits WHERE iteration = ?1 AND status = 'open'), "
                "(SELECT COUNT(*) FROM hits WHERE iteration = ?1 AND status = 'complete'), "
                "(SELECT COUNT(*) FROM hits WHERE iteration = ?1 AND status = 'retracted')", (it,)).fetchone()))
            n_hits_total = conn.execute("SELECT COUNT(*) FROM hits").fetchone()[0]
            n_obs = conn.execute("SELECT COUNT(*) FROM live").fetchone()[0]
            n_log = _max_seq(conn)
            events = dict(conn.execute("SELECT status, COUNT(*) FROM events GROUP BY status").fetchall())
            n_rejects = conn.execute("SELECT COUNT(*) FROM rejects").fetchone()[0]
            last_rec = conn.execute("SELECT value FROM meta WHERE key = 'ls.last_reconciliation'").fetchone()
            state = _load_state(conn)
        # The posterior variance alone: ``Model.selection_keys`` returns (location, variance) with the same
        # variance as ``Model.summary`` (every model), without the credible intervals (Beta quantiles for EASL / RA,
        # the costly part of a summary: ~15 ms of ~20 ms at 100,000 items).
        variance = np.asarray(self.model.selection_keys(state)[1], dtype=np.float64)
        count = state["count"]
        out: dict[str, Any] = {
            "path": self.path, "method": self.hyper.method, "iteration": it, "n_items": self.n_items,
            "n_observations": int(n_obs), "n_log_records": int(n_log), "n_hits_total": int(n_hits_total),
            "n_hits_open": int(counts.get("open", 0)), "n_hits_complete": int(counts.get("complete", 0)),
            "n_hits_retracted": int(counts.get("retracted", 0)),
        }
        finite = variance[np.isfinite(variance)]
        reason = ("no item has a finite variance" if variance.size else "the project has no items")
        _put(out, "mean_variance", float(finite.mean()) if finite.size == variance.size and finite.size else None,
             reason if not finite.size else "some variances are not finite")
        _put(out, "max_variance", float(finite.max()) if finite.size == variance.size and finite.size else None,
             reason if not finite.size else "some variances are not finite")
        out["variance_scale"] = "unit interval [0, 1] (multiply by (score_max - score_min)^2 for the score range)"
        out["n_annotations"] = {"min": int(count.min()), "mean": float(count.mean()), "max": int(count.max())} \
            if count.size else {"min": None, "mean": None, "max": None, "reason": "the project has no items"}
        out["events"] = {k: int(events.get(k, 0)) for k in ("pending", "done", "failed")}
        out["n_rejects"] = int(n_rejects)
        out["last_reconciliation"] = last_rec[0] if last_rec else None
        if last_rec is None:
            out["last_reconciliation_reason"] = "no reconciliation with Label Studio recorded"
        out.update({"hit_size": self.hyper.hit_size, "score_range": [self.hyper.score_min, self.hyper.score_max],
                    "seed": self.hyper.seed, "schema_version": schema.SCHEMA_VERSION})
        return out


# ------------------------------------------------------------------------------------------------------ helpers

_STATUS_SQL = ("CASE WHEN NOT EXISTS (SELECT 1 FROM hit_items hi WHERE hi.hit_id = hits.hit_id AND NOT EXISTS "
               "(SELECT 1 FROM live l WHERE l.hit_id = hi.hit_id AND l.item_idx = hi.item_idx)) "
               "THEN 'complete' ELSE 'open' END")


def _put(out: dict, key: str, value: float | None, reason: str) -> None:
    out[key] = value
    if value is None:
        out[f"{key}_reason"] = reason


def _creator() -> str:
    try:
        from importlib.metadata import version

        return f"easl-toolkit {version('easl-toolkit')}"
    except Exception:  # not installed as a distribution (e.g. run from a source tree)
        return "easl-toolkit"


def _fill_temp(conn: sqlite3.Connection, name: str, values: list) -> None:
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {name} (v PRIMARY KEY)")
    conn.execute(f"DELETE FROM temp.{name}")
    conn.executemany(f"INSERT OR IGNORE INTO temp.{name}(v) VALUES (?)", ((v,) for v in values))


def _named_hits(frame: pd.DataFrame) -> list[str]:
    """The distinct HIT ids a batch of annotation rows names."""
    return id_strings(frame["hit_id"]).dropna().unique().tolist()


def _hit_fingerprint(conn: sqlite3.Connection, hit_ids: list[str]) -> tuple:
    """What validation reads of the project besides fixed data: which of ``hit_ids`` exist and are retracted."""
    if not hit_ids:
        return ()
    return tuple(conn.execute("SELECT hit_id, status = 'retracted' FROM hits WHERE hit_id IN "
                              "(SELECT value FROM json_each(?)) ORDER BY hit_id", (json.dumps(hit_ids),)).fetchall())


def _max_seq(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM observations").fetchone()[0])


STATE_PATCH_FRACTION = 1 / 16  # patch the cached arrays in place when at most this share of each one changed


def _save_state(conn: sqlite3.Connection, state: dict[str, np.ndarray], seq: int) -> None:
    """Store the model arrays and the log position they reflect.

    When the stored arrays have the same names and shapes, only the values that differ (bit for bit) are written,
    in place with SQLite's incremental blob I/O: a small ingest then writes a few pages instead of the whole state
    (3 arrays x 8 bytes x N items), which keeps transactions and the WAL small on large projects. Otherwise (new
    file, or many values changed) the rows are rewritten whole. Either way the stored bytes equal ``state``.
    """
    arrays = {name: np.ascontiguousarray(arr, dtype="<f8") for name, arr in state.items()}
    stored = {name: (rowid, dtype, shape, data) for rowid, name, dtype, shape, data in
              conn.execute("SELECT rowid, name, dtype, shape, data FROM state")}
    changes: dict[str, np.ndarray] | None = None
    if set(stored) == set(arrays) and all(stored[n][1] == "<f8" and json.loads(stored[n][2]) == list(a.shape)
                                          for n, a in arrays.items()):
        changes = {n: np.flatnonzero(np.frombuffer(stored[n][3], dtype="<u8") != a.reshape(-1).view(np.uint64))
                   for n, a in arrays.items()}
        if any(c.size > STATE_PATCH_FRACTION * arrays[n].size for n, c in changes.items()):
            changes = None
    if changes is None:
        conn.execute("DELETE FROM state")
        conn.executemany("INSERT INTO state(name, dtype, shape, data) VALUES (?, ?, ?, ?)",
                         [(name, "<f8", json.dumps(list(a.shape)), a.tobytes()) for name, a in arrays.items()])
    else:
        for name, changed in changes.items():
            if changed.size == 0:
                continue
            # runs of consecutive changed values: one seek + write each
            breaks = np.flatnonzero(np.diff(changed) != 1) + 1
            starts = changed[np.r_[0, breaks]]
            ends = changed[np.r_[breaks - 1, changed.size - 1]] + 1
            flat = arrays[name].reshape(-1)
            with conn.blobopen("state", "data", stored[name][0]) as blob:
                for start, end in zip(starts.tolist(), ends.tolist()):
                    blob.seek(start * 8)
                    blob.write(flat[start:end].tobytes())
    conn.execute("INSERT INTO meta(key, value) VALUES ('state_seq', ?) ON CONFLICT(key) DO UPDATE SET "
                 "value = excluded.value", (str(int(seq)),))


def _load_state(conn: sqlite3.Connection) -> dict[str, np.ndarray]:
    state = {}
    for name, dtype, shape, data in conn.execute("SELECT name, dtype, shape, data FROM state ORDER BY name"):
        state[name] = np.frombuffer(data, dtype=np.dtype(dtype)).reshape(json.loads(shape)).astype(np.float64)
    return state


def _insert_iteration(conn: sqlite3.Connection, iteration: int, hits: np.ndarray, log_seq: int) -> None:
    ids = _hit_ids(iteration, hits.shape[0])
    stamp = now()
    conn.execute("INSERT INTO iterations(iteration, started_at, n_hits, log_seq) VALUES (?, ?, ?, ?)",
                 (iteration, stamp, len(ids), log_seq))
    conn.executemany("INSERT INTO hits(hit_id, iteration, status, created_at) VALUES (?, ?, 'open', ?)",
                     ((h, iteration, stamp) for h in ids))
    n = hits.shape[1] if hits.ndim == 2 else 0
    conn.executemany("INSERT INTO hit_items(hit_id, position, item_idx) VALUES (?, ?, ?)",
                     zip(np.repeat(np.asarray(ids, dtype=object), n).tolist(),
                         np.tile(np.arange(n), len(ids)).tolist(), hits.reshape(-1).tolist()))


def _refresh_hits(conn: sqlite3.Connection, hit_ids: list[str] | None) -> None:
    """Recompute ``open``/``complete`` for the given HITs (all when None); retracted HITs stay retracted."""
    if hit_ids is None:
        conn.execute(f"UPDATE hits SET status = {_STATUS_SQL} WHERE status != 'retracted'")
        return
    if not hit_ids:
        return
    _fill_temp(conn, "_touched", hit_ids)
    conn.execute(f"UPDATE hits SET status = {_STATUS_SQL} WHERE status != 'retracted' AND hit_id IN "
                 f"(SELECT v FROM temp._touched)")
