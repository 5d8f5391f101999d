"""Iterations and HITs of the project file (the HITs chosen by ``core.store.choosing.choose_hits``).

Iteration 0 covers every item once (``core.selection.first_iteration_hits``); iteration t >= 1 is chosen when every
HIT of iteration t - 1 is complete or retracted (batch mode, :meth:`Iterations.next_hits`), or a few HITs at a time
whenever fewer than a target are open (streaming mode, :meth:`Iterations.top_up_hits`: the Label Studio plugin).
"""

from __future__ import annotations

import os
import sqlite3
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.store.choosing import choose, choose_hits, state_seq, stop_decision
from easl_toolkit.core.store.db import Database, fill_temp, max_seq
from easl_toolkit.core.store.hit_columns import (
    HitColumns,
    LongHits,
    hit_records,
    long_frame,
    long_hits,
    read_every_item,
    read_hit_columns,
    read_item_strings,
    read_only,
    scans_every_item,
    started_long_hits,
    write_started,
)
from easl_toolkit.core.store.hit_rows import insert_iteration
from easl_toolkit.core.store.inputs import save_design
from easl_toolkit.core.store.items import Catalog
from easl_toolkit.core.store.settings import Settings
from easl_toolkit.core.store.state import load_state

if TYPE_CHECKING:
    from concurrent.futures import Future

    import pandas as pd

    from easl_toolkit.core.models.inputs import Chosen


def current_iteration(conn: sqlite3.Connection) -> int:
    """The current iteration (0 = the covering iteration)."""
    return int(conn.execute("SELECT COALESCE(MAX(iteration), 0) FROM iterations").fetchone()[0])


class Iterations:
    """The iterations of an open project and their HITs: reading them, starting the next iteration, topping up."""

    def __init__(self, db: Database, settings: Settings, catalog: Catalog) -> None:
        self._db = db
        self._settings = settings
        self._catalog = catalog

    def iteration(self) -> int:
        """The current iteration (0 = the covering iteration)."""
        return current_iteration(self._db.conn)

    def open_hit_times(self) -> dict[str, str]:
        """``hit_id -> created_at`` of every open HIT (of any iteration), oldest first."""
        rows = self._db.conn.execute("SELECT hit_id, created_at FROM hits WHERE status = 'open' ORDER BY rowid")
        return {str(h): str(t) for h, t in rows.fetchall()}

    def _hit_columns(self, conn: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> HitColumns | None:
        """The HITs ``h`` matching ``where`` column-wise (:func:`core.store.hit_columns.read_hit_columns`) with the
        items' ``item_id, text`` (and ``data`` when the items file had extra columns); None when no HIT matches."""
        names = ["item_id", "text", "data"] if self._catalog.columns else ["item_id", "text"]
        return read_hit_columns(conn, where, params, names, self._catalog.n_items)

    def _hit_records(self, conn: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        """HIT records (``hit_id, iteration, items``) of the HITs ``h`` matching ``where`` (:meth:`_hit_columns`)."""
        return hit_records(self._hit_columns(conn, where, params), bool(self._catalog.columns))

    def _open(self, every_iteration: bool) -> tuple[str, tuple[Any, ...]]:
        """The condition on ``h`` (and its parameters) of the open HITs of the current iteration, or of all."""
        if every_iteration:
            return "h.status = 'open'", ()
        return "h.iteration = ? AND h.status = 'open'", (self.iteration(),)

    def open_hits_long(self, *, every_iteration: bool = False) -> LongHits:
        """:meth:`open_hits` in long form (:class:`core.store.hit_columns.LongHits`, written by its ``write_csv``
        without a pandas DataFrame when the items have no extra columns): ``easl next --output hits.csv``."""
        return self._open_hits_long(every_iteration, None)

    def _open_hits_long(self, every_iteration: bool, every_item: Future[list[Any]] | None) -> LongHits:
        """:meth:`open_hits_long`; ``every_item``: the ids and texts of every item being read
        (``core.store.hit_columns.read_every_item``), used when the HITs hold many items."""
        n_items, columns = self._catalog.n_items, self._catalog.columns
        with self._db.reading() as conn:
            where, params = self._open(every_iteration)
            if columns:
                return long_hits(conn, self._hit_columns(conn, where, params), columns, n_items)
            cols = read_hit_columns(conn, where, params, [], n_items)  # item_id and text: by long_hits
            if cols is not None and every_item is not None and scans_every_item(cols.item.size, n_items):
                return long_hits(conn, cols, [], n_items, items=(every_item.result(), cols.item))
            return long_hits(conn, cols, [], n_items)

    def next_hits_long(self) -> LongHits:
        """:meth:`next_hits` in long form (:meth:`open_hits_long`), in one transaction; a new iteration's HITs
        of items without extra columns are not read back (``core.store.hit_columns.started_long_hits``)."""
        with self._db.writing() as conn:
            started = self._start_iteration(conn)
            if started is None or not _full(started[1]) or self._catalog.columns:
                return self.open_hits_long()
            iteration, hits = started
            items = read_item_strings(conn, hits.reshape(-1), ["item_id", "text"], self._catalog.n_items)
            return started_long_hits(iteration, hits, items)

    def open_hits_frame(self, *, every_iteration: bool = False) -> pd.DataFrame:
        """:meth:`open_hits` in long form, built column-wise: one row per (HIT, position), ``hit_id, iteration,
        position, item_id, text`` and the items' extra columns (``docs/guides/cli.md``, ``easl next``)."""
        with self._db.reading() as conn:
            return long_frame(self._hit_columns(conn, *self._open(every_iteration)), self._catalog.columns)

    def open_hits(self, *, every_iteration: bool = False) -> list[dict[str, Any]]:
        """HIT records that are ``open``: of the current iteration, or with ``every_iteration`` of all of them (the
        streaming top-ups of the plugin leave open HITs in several iterations). ``docs/guides/cli.md``, ``easl
        next``: ``hit_id, iteration, items``; each item has ``item_id``, ``text`` and the item's extra columns."""
        with self._db.reading() as conn:
            return self._hit_records(conn, *self._open(every_iteration))

    def hits(self, iteration: int | None = None) -> list[dict[str, Any]]:
        """HIT records of an iteration (default: the current one), whatever their status, with ``status``."""
        with self._db.reading() as conn:
            it = self.iteration() if iteration is None else int(iteration)
            records = self._hit_records(conn, "h.iteration = ?", (it,))
            status = dict(conn.execute("SELECT hit_id, status FROM hits WHERE iteration = ?", (it,)).fetchall())
        for r in records:
            r["status"] = status[r["hit_id"]]
        return records

    def next_hits(self) -> list[dict[str, Any]]:
        """The open HITs of the current iteration, after starting the next iteration if there are none (one
        transaction: :meth:`advance`, then :meth:`open_hits`)."""
        with self._db.writing():
            self.advance()
            return self.open_hits()

    def advance(self) -> bool:
        """Start the next iteration when the current one has no open HIT (every HIT complete or retracted); one
        transaction. Returns whether an iteration was started: an aware project with a stop target whose stopping
        rule is met (:func:`stop_decision`) starts none. Iteration t's HITs: :func:`choose_hits` with ``k =
        hits_per_iteration or N // n`` and the generator ``default_rng([seed, t])``."""
        with self._db.writing() as conn:
            return self._start_iteration(conn) is not None

    def _start_iteration(self, conn: sqlite3.Connection) -> tuple[int, NDArray[Any]] | None:
        """:meth:`advance` inside the caller's transaction: ``(iteration, hits)`` of the iteration started (its
        HITs as rows of item positions), or None when none was."""
        chosen = self._choose_iteration(conn)
        if chosen is None:
            return None
        _record(conn, *chosen)
        return chosen[0], chosen[1].hits

    def _choose_iteration(self, conn: sqlite3.Connection) -> tuple[int, Chosen] | None:
        """``(iteration, chosen)`` of the iteration :meth:`advance` would start (its HITs and the design they were
        drawn with, ``Model.choose``), not yet recorded; None when the current one has open HITs or the stopping
        rule is met."""
        if self._n_open(conn):
            return None
        state = load_state(conn, writable=False)  # choosing reads the state: views of the stored bytes, no copy
        if self._stopped(conn, state):
            return None
        it, hyper = self.iteration(), self._settings.hyper
        rng = np.random.default_rng([hyper.seed, it + 1])
        return it + 1, choose(self._settings.model, state, n_hits=self._per_iteration(), rng=rng)

    def n_open(self) -> int:
        """The open HITs of the current iteration (one count: what a command that just ingested says)."""
        with self._db.reading() as conn:
            return self._n_open(conn)

    def _n_open(self, conn: sqlite3.Connection) -> int:
        """The open HITs of the current iteration."""
        sql = "SELECT COUNT(*) FROM hits WHERE iteration = ? AND status = 'open'"
        return int(conn.execute(sql, (self.iteration(),)).fetchone()[0])

    def _per_iteration(self) -> int:
        """The HITs of an iteration: ``hits_per_iteration or N // n``."""
        return self._settings.model.hits_per_iteration(self._catalog.n_items)

    def _stopped(self, conn: sqlite3.Connection, state: dict[str, NDArray[Any]]) -> bool:
        """Whether the stopping rule says the target is reached (:func:`stop_decision`): no new HITs then."""
        decision = stop_decision(self._settings.model, state, state_seq(conn))
        return decision is not None and bool(decision.stop)

    def next_hits_file(self, path: str | os.PathLike[str], fmt: str = "csv", *, raw_cells: bool = False) -> int:
        """:meth:`next_hits_long` written to ``path`` as ``fmt`` (``core.store.hit_columns.HIT_FORMATS``); returns
        the number of HITs. One transaction; the file is renamed into place after the commit, so that it appears
        only with the HITs it lists. Text cells a spreadsheet would execute are neutralised unless ``raw_cells``.
        SQLite runs without the GIL, so threads share the work: every item's id and text is read by a connection of
        its own while the HITs are chosen, and a new iteration is written while its rows are recorded.
        """
        from concurrent.futures import ThreadPoolExecutor

        from easl_toolkit.core.outputs import atomic_outputs

        with atomic_outputs([path]) as (tmp,), self._db.writing() as conn, ThreadPoolExecutor(max_workers=2) as pool:
            # (the pool is left first: its threads are done before the commit or rollback)
            names = ["item_id", "text"]
            ahead = pool.submit(read_every_item, self._db.path, names) if self._reads_every_item(conn) else None
            chosen = self._choose_iteration(conn)
            if chosen is None or not _full(chosen[1].hits) or self._catalog.columns:
                if chosen is not None:
                    _record(conn, *chosen)
                long = self._open_hits_long(False, ahead)
                long.write_to(tmp, path, fmt, raw_cells=raw_cells)
                return long.n_hits
            iteration, hits = chosen[0], chosen[1].hits
            recorded = pool.submit(_record, conn, iteration, chosen[1])
            item: NDArray[Any] = hits.reshape(-1)
            items: tuple[list[Any], NDArray[Any]]
            if ahead is not None:
                items = ahead.result(), item
            else:
                with read_only(self._db.path) as reader:
                    items = read_item_strings(reader, item, names, self._catalog.n_items)
            write_started(tmp, path, fmt, iteration, hits, items, raw_cells=raw_cells)
            recorded.result()  # the insert's error, if any (rolls the transaction back)
            return int(hits.shape[0])

    def _reads_every_item(self, conn: sqlite3.Connection) -> bool:
        """Whether the file of :meth:`next_hits_file` will likely need every item's id and text (items without extra
        columns, HITs of at least an eighth of the items: ``scans_every_item``). A guess: the file is the same."""
        if self._catalog.columns or not self._catalog.n_items:
            return False
        k = self._n_open(conn) or self._per_iteration()
        return scans_every_item(k * self._settings.hyper.hit_size, self._catalog.n_items)

    def open_item_mask(self) -> tuple[NDArray[Any], int]:
        """``(mask, n_open)``: the items of every open HIT (of any iteration) and the number of open HITs."""
        with self._db.reading() as conn:
            sql = "SELECT hi.item_idx FROM hits h JOIN hit_items hi ON hi.hit_no = h.hit_no WHERE h.status = 'open'"
            idx = np.fromiter((r[0] for r in conn.execute(sql)), dtype=np.int64)
            n_open = int(conn.execute("SELECT COUNT(*) FROM hits WHERE status = 'open'").fetchone()[0])
        mask = np.zeros(self._catalog.n_items, dtype=bool)
        mask[idx] = True
        return mask, n_open

    def top_up_hits(self, n_target: int) -> int:
        """Streaming mode: add HITs, one at a time, until ``n_target`` are open (or fewer than a HIT's worth of
        items are free); returns how many were added. One transaction.

        Each new HIT is :func:`choose_hits` with ``n_hits=1`` and the items of every open HIT excluded; they are
        recorded as one new iteration t (:meth:`add_hits`) chosen with ``default_rng([seed, t])``. A model that
        draws whole iterations (``Model.top_ups`` False) gets none: its next iteration starts, as :meth:`advance`
        starts it, once no HIT is open.
        """
        with self._db.writing() as conn:
            if not self._settings.model.top_ups:  # whole iterations only: the next one once none is open
                started = self._start_iteration(conn) if n_target > 0 else None
                return 0 if started is None else int(started[1].shape[0])
            rows = self._choose_top_up(conn, n_target)
            if len(rows):
                self.add_hits(rows)
            return len(rows)

    def choose_top_up(self, n_target: int) -> NDArray[Any]:
        """The HITs :meth:`top_up_hits` would add now (item positions, one row per HIT; no row when none), without
        recording them: chosen ahead, they are recorded later with :meth:`add_hits` (which refuses them if an item
        was put in an open HIT meanwhile). Reads only."""
        with self._db.reading() as conn:
            return self._choose_top_up(conn, n_target)

    def _choose_top_up(self, conn: sqlite3.Connection, n_target: int) -> NDArray[Any]:
        hyper = self._settings.hyper
        none = np.zeros((0, hyper.hit_size), dtype=np.int64)
        mask, n_open = self.open_item_mask()
        need = n_target - n_open
        if need <= 0 or self._catalog.n_items == 0 or not self._settings.model.top_ups:
            return none
        rng = np.random.default_rng([hyper.seed, self.iteration() + 1])
        state = load_state(conn)
        if self._stopped(conn, state):
            return none
        rows = []
        for _ in range(need):
            if int((~mask).sum()) < hyper.hit_size:
                break
            hit = choose_hits(self._settings.model, state, n_hits=1, rng=rng, exclude=mask)
            if hit.ndim != 2 or hit.shape[0] == 0 or hit.shape[1] != hyper.hit_size:
                break  # too few free items for a full HIT
            rows.append(hit[0])
            mask[hit[0]] = True
        return np.vstack(rows) if rows else none

    def add_hits(self, hits: Any) -> list[dict[str, Any]]:
        """Record HITs chosen outside :meth:`next_hits` as a new iteration.

        The new iteration is ``t = iteration() + 1``; its HITs get the ids ``it{t}-{j}`` like those of
        :meth:`next_hits`, are ``open``, and count toward completion, validation and ``easl verify`` as usual.
        One transaction (joins the caller's :meth:`transaction`).

        Parameters
        ----------
        hits : array-like of int, shape (n_hits, width)
            Item positions in model-array order (:meth:`item_index`), one row per HIT; ``1 <= width <= hit_size``.

        Returns
        -------
        list of dict
            The new HIT records (``hit_id, iteration, items``), in row order; empty (and no iteration started)
            when ``hits`` has no rows.

        Raises
        ------
        ValueError
            ``hits`` is not a 2-d integer array of width 1..hit_size, an index is out of range, an item repeats
            within the given HITs, or an item is already in an open HIT (of any iteration).
        """
        self._db.writable()
        arr = np.asarray(hits)
        if arr.ndim != 2 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            raise ValueError(
                f"add_hits: hits must be a 2-d integer array (n_hits, width), got shape {arr.shape} "
                f"and dtype {arr.dtype}."
            )
        arr = arr.astype(np.int64, copy=False)
        if arr.shape[0] == 0:
            return []
        if not 1 <= arr.shape[1] <= self._settings.hyper.hit_size:
            raise ValueError(
                f"add_hits: HIT width {arr.shape[1]} is outside 1..hit_size ({self._settings.hyper.hit_size})."
            )
        flat = arr.reshape(-1)
        if flat.min() < 0 or flat.max() >= self._catalog.n_items:
            raise ValueError(f"add_hits: item positions must lie in 0..{self._catalog.n_items - 1}.")
        uniq, counts = np.unique(flat, return_counts=True)
        if (counts > 1).any():
            raise ValueError(
                f"add_hits: item position {int(uniq[counts > 1][0])} appears more than once in the given HITs."
            )
        with self._db.writing() as conn:
            fill_temp(conn, "_new_items", flat.tolist())
            clash = conn.execute(
                "SELECT hi.item_idx, h.hit_id FROM hits h JOIN hit_items hi ON hi.hit_no = h.hit_no "
                "WHERE h.status = 'open' AND hi.item_idx IN (SELECT v FROM temp._new_items) LIMIT 1"
            ).fetchone()
            if clash is not None:
                raise ValueError(
                    f"add_hits: item position {clash[0]} is already in the open HIT {clash[1]!r}; no "
                    f"item may be in two open HITs."
                )
            iteration = self.iteration() + 1
            insert_iteration(conn, iteration, arr, max_seq(conn))
            return self._hit_records(conn, "h.iteration = ?", (iteration,))


def _full(hits: NDArray[Any]) -> bool:
    """Whether ``hits`` has rows and every row is full (no -1 ending a shorter HIT): the fast paths of ``easl next``
    build the file from the array itself."""
    return bool(hits.size) and int(hits.min()) >= 0


def _record(conn: sqlite3.Connection, iteration: int, chosen: Chosen) -> None:
    """Record a new iteration's HITs and, in the same transaction, the design they were drawn with."""
    insert_iteration(conn, iteration, chosen.hits, max_seq(conn))
    if chosen.design is not None:
        save_design(conn, iteration, chosen.design)
