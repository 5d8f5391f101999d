"""The append-only observation log: validating and appending scores (withdrawing them: :mod:`core.store.retraction`).

Each observation carries a source key (:mod:`core.store.validation`): ingesting the same key with the same score
changes nothing; a new score for a key appends a record that supersedes the old one; a retraction appends a
``retract`` record. The live observation of a key is its last record when that is a score; the ``live`` table
indexes them. What an ingest changes in the live log, the scores that became live and those they superseded, goes
to the model in one call before the commit (``Model.update`` through :meth:`core.store.derived.Replay.update`), which
decides how the change becomes its state.

A large ingest works one step ahead in a thread (:class:`ReadAhead`): while the writer appends chunk k, chunk k + 1
is parsed and validated. The writer says when the thread may go on (:meth:`ReadAhead.go_on`): after it has bound its
rows, before its long statements, which release the GIL (why: docs/studies/code-notes.md).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.errors import InvalidRows
from easl_toolkit.core.store.batches import (
    Carry,
    IngestReport,
    Prepared,
    completed_hits,
    conflict_rejects,
    hit_fingerprint,
    named_hits,
    record_rejects,
)
from easl_toolkit.core.store.db import Database, max_seq, now
from easl_toolkit.core.store.deferred import DEFERRED_CACHE_KIB, Places, pragmas, remove_live, settle
from easl_toolkit.core.store.derived import Replay
from easl_toolkit.core.store.hit_columns import read_only
from easl_toolkit.core.store.hit_rows import mark_complete, refresh_hits
from easl_toolkit.core.store.items import Catalog
from easl_toolkit.core.store.log_rows import LogRows, append_log, copy_to_live, live_matches, log_rows
from easl_toolkit.core.store.settings import Settings

if TYPE_CHECKING:
    import pandas as pd

    from easl_toolkit.core.store.cells import Locations
    from easl_toolkit.core.store.validation import Batch
    from easl_toolkit.core.tables import Table

T = TypeVar("T")

_DONE = object()


class ReadAhead(Generic[T]):
    """Iterate over ``produce``, each item made by a worker thread (``concurrent.futures``) while the caller works
    on the one before.

    The first item is asked for at once, each later one when the caller calls :meth:`go_on` after taking the one
    before (taking an item without having called it calls it), so at most two items are alive at once: the
    caller's and the next one. Items come in order; an exception raised by ``produce`` is raised by ``next`` where
    its item would have come, and the iteration ends there. :meth:`close` (also on leaving a ``with`` block) lets
    the worker finish the item it is making, closes ``produce`` in that thread and joins it.
    """

    def __init__(self, produce: Iterator[T]) -> None:
        self._produce = produce
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="easl-read-ahead")
        self._next: Future[object] | None = None
        self._ended = False
        self.go_on()

    def go_on(self) -> None:
        """Let the worker make the next item now (once per item taken; later calls do nothing)."""
        if self._next is None:
            self._next = self._pool.submit(next, self._produce, _DONE)

    def __iter__(self) -> ReadAhead[T]:
        return self

    def __next__(self) -> T:
        if self._ended:
            raise StopIteration
        self.go_on()
        assert self._next is not None
        future, self._next = self._next, None
        try:
            item = future.result()
        except BaseException:
            self._ended = True
            raise
        if item is _DONE:
            self._ended = True
            raise StopIteration
        return item  # type: ignore[return-value]

    def close(self) -> None:
        """Stop after the item being made, close ``produce`` in the worker thread and join it."""
        close = getattr(self._produce, "close", None)
        if close is not None:
            self._pool.submit(close)
        self._pool.shutdown(wait=True)

    def __enter__(self) -> ReadAhead[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: rows of the first part of an ingest's first chunk, validated on their own so that the writer starts early
#: (:meth:`ObservationLog.ingest_chunks`)
FIRST_PART = 50_000


def _refused(name: str, messages: list[str], n_rows: int) -> InvalidRows:
    """The error of an input with invalid rows, of which nothing was ingested: every bad row's message."""
    return InvalidRows(
        f"{name}: {len(messages)} of {n_rows} rows are invalid, so nothing was ingested:\n  " + "\n  ".join(messages),
        messages=messages,
        path=name,
    )


@dataclass
class _Chunks:
    """What :meth:`ObservationLog.ingest_chunks` gathers as it goes, and how it appends (``since``: the log position
    where it starts; ``places``: where deferred rows came from; ``look_up``: whether keys are looked up in the live
    index). ``indexed`` is set once the item ids are read."""

    source: str
    name: str
    report: IngestReport = field(default_factory=IngestReport)
    rejects: list[pd.DataFrame] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    carry: Carry = field(default_factory=Carry)
    indexed: threading.Event = field(default_factory=threading.Event)
    since: int = 0
    places: Places | None = None
    look_up: bool = True


@dataclass
class _Matches:
    """The live observations of a chunk's candidate keys (:func:`core.store.log_rows.live_matches`), conflicts
    with an earlier chunk left out: ``found`` (``(position, score_raw, score01, item_idx, hit_id, seq)``), ``pos``
    (the candidate's position) and ``same`` (the live score is the candidate's) of each; ``moved``: the positions
    of the conflicts, neither kept nor live, and their ``conflicts`` (rejects and messages)."""

    found: list[tuple[Any, ...]]
    pos: NDArray[Any]
    same: NDArray[Any]
    moved: NDArray[Any]
    conflicts: tuple[pd.DataFrame, list[str]] | None


def _matches(conn: sqlite3.Connection, rows: LogRows, since: int | None, locations: Any) -> _Matches:
    """:class:`_Matches` of ``rows``; with ``since`` (a log position), a key with a live score appended at
    ``since`` or later that differs is a conflict with an earlier chunk of the same input."""
    cand = rows.cand
    found = live_matches(conn, rows) if rows.look_up else []
    pos = np.asarray([r[0] for r in found], dtype=np.int64)
    same = np.asarray([r[1] for r in found], dtype=np.float64) == cand["score_raw"].to_numpy()[pos]
    conflicts = None
    moved = np.zeros(0, dtype=np.int64)
    if since is not None:
        clash = ~same & (np.asarray([r[5] for r in found], dtype=np.int64) >= since)
        if clash.any():
            moved = pos[clash]
            conflicts = conflict_rejects(cand.iloc[moved], locations[cand["row"].to_numpy()[moved]])
            found = [r for r, c in zip(found, clash.tolist()) if not c]
            pos, same = pos[~clash], same[~clash]
    return _Matches(found, pos, same, moved, conflicts)


class ObservationLog:
    """Validating annotation rows and appending them to the log, with the state updated in the same transaction."""

    def __init__(self, db: Database, settings: Settings, catalog: Catalog, replay: Replay) -> None:
        self._db = db
        self._settings = settings
        self._catalog = catalog
        self._replay = replay

    def _hits_frame(self, conn: sqlite3.Connection, ids: Iterable[str]) -> pd.DataFrame:
        """``hit_id, status, item_idx`` of the HITs ``ids`` (validation's ``hits``): each HIT's items together, in
        position order, the HITs in creation order (a HIT without items has no row, as in a join).

        The HITs and the items come as texts (``group_concat`` read by numpy, ``json_group_array`` by ``json``), not a
        row tuple each: the ingest target of ``bench/bench_scale.py``. The items of a file's HITs are read as one range
        of ``hit_items`` where the HITs fill at least half of it (those of one ``easl next`` are numbered in a row)."""
        import pandas as pd

        named = json.dumps(list({h for h in ids if h is not None}))  # (in any order: the HITs come by number)
        listed = conn.execute(
            "SELECT group_concat(hit_no), json_group_array(hit_id), json_group_array(status) FROM (SELECT hit_no, "
            "hit_id, status FROM hits WHERE hit_id IN (SELECT value FROM json_each(?)) ORDER BY hit_no)",
            (named,),
        ).fetchone()
        nos = np.fromstring(listed[0] or "", dtype=np.int64, sep=",")
        hit_ids, statuses = (np.asarray(json.loads(t), dtype=object) for t in listed[1:])
        dense = nos.size > 0 and nos[-1] - nos[0] < 2 * nos.size
        where, bound = (
            ("hit_no BETWEEN ? AND ?", (int(nos[0]), int(nos[-1])))
            if dense
            else ("hit_no IN (SELECT value FROM json_each(?))", (json.dumps(nos.tolist()),))
        )
        texts = conn.execute(
            f"SELECT group_concat(hit_no), group_concat(item_idx) FROM (SELECT hit_no, item_idx FROM hit_items "
            f"WHERE {where} ORDER BY hit_no, position)",
            bound,
        ).fetchone()
        hit_no, item_idx = (np.fromstring(t or "", dtype=np.int64, sep=",") for t in texts)
        at = np.minimum(np.searchsorted(nos, hit_no), max(nos.size - 1, 0))
        kept = nos[at] == hit_no if nos.size else np.zeros(0, dtype=bool)
        at = at[kept]
        return pd.DataFrame(
            {
                "hit_id": pd.Series(hit_ids[at], dtype=object),
                "status": pd.Series(statuses[at], dtype=object),
                "item_idx": item_idx[kept],
            }
        )

    def validate(self, rows: Any, *, source: str) -> Batch:
        """Validate annotation rows without writing anything (see :mod:`core.store.validation`)."""
        from easl_toolkit.core.store.validation import normalize_rows

        frame, locations, _ = normalize_rows(rows, source)
        with self._db.reading() as conn:
            return self._validate(conn, frame, locations)

    def prepare(self, rows: Any, *, source: str) -> Prepared:
        """Validate annotation rows under a read snapshot, outside any write transaction, for a later
        :meth:`ingest`, which validates again only if the named HITs' existence or retraction changed (all else
        validation reads is fixed): the result is that of ``ingest(rows)``, and a front end that serialises writers
        (the Label Studio worker) holds the write lock for the append only."""
        from easl_toolkit.core.store.validation import normalize_rows

        frame, locations, name = normalize_rows(rows, source)
        named = named_hits(frame)
        with self._db.reading() as conn:
            batch = self._validate(conn, frame, locations, named)
            fingerprint = hit_fingerprint(conn, named)
        return Prepared(
            path=self._db.path,
            name=name,
            frame=frame,
            locations=locations,
            batch=batch,
            hit_ids=named,
            fingerprint=fingerprint,
        )

    def _validate(
        self,
        conn: sqlite3.Connection,
        frame: pd.DataFrame,
        locations: Locations,
        named: list[str] | None = None,
    ) -> Batch:
        from easl_toolkit.core.store.validation import validate

        hits = self._hits_frame(conn, named_hits(frame) if named is None else named)
        return validate(
            frame,
            locations,
            item_index=self._catalog.item_index(),
            hits=hits,
            score_min=self._settings.hyper.score_min,
            score_max=self._settings.hyper.score_max,
            whole_submissions=self._settings.model.whole_submissions,
            method=self._settings.hyper.method,
        )

    def ingest(self, rows: Any, *, source: str, skip_invalid: bool = False) -> IngestReport:
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
        InvalidRows
            Some row is invalid and ``skip_invalid`` is False: the message lists every bad row as
            ``file:line: field: reason`` (``exc.messages``); nothing is written.
        """
        from easl_toolkit.core.store.validation import normalize_rows

        prepared = rows if isinstance(rows, Prepared) else None
        if prepared is not None:
            if prepared.path != self._db.path:
                raise ValueError(f"ingest: rows prepared for {prepared.path}, not {self._db.path}.")
            frame, locations, name = prepared.frame, prepared.locations, prepared.name
        else:
            frame, locations, name = normalize_rows(rows, source)
        report = IngestReport(n_rows=len(frame))
        with self._db.writing() as conn:
            if prepared is not None and hit_fingerprint(conn, prepared.hit_ids) == prepared.fingerprint:
                batch = prepared.batch
            else:
                batch = self._validate(conn, frame, locations)
            report.rejects = batch.rejects
            report.rejected = len(batch.rejects)
            if report.rejected and not skip_invalid:
                raise _refused(name, batch.messages, len(frame))
            if report.rejected:
                record_rejects(conn, batch.rejects, source)
            self._append(conn, batch, source, report)
        return report

    def ingest_chunks(
        self,
        chunks: Iterable[Any],
        *,
        source: str,
        skip_invalid: bool = False,
        before_commit: Callable[[IngestReport], None] | None = None,
        defer_live: bool = False,
    ) -> IngestReport:
        """Validate and append annotation rows given in chunks (e.g. :func:`core.tables.iter_table`), all in one
        transaction: memory stays flat whatever the file size, and the result is all or nothing.

        Each chunk is validated as :meth:`ingest` validates a batch; across chunks, a row whose key was given a
        different score earlier in the same input is a conflict (rejected), the same score a duplicate. When a
        row is invalid and ``skip_invalid`` is False, the remaining chunks are still validated (every bad row is
        listed) and :class:`InvalidRows` is raised: nothing is written; nor if ``before_commit``, called with the
        report inside the transaction (e.g. to write the rejects file), raises. A HIT whose rows fall in two chunks
        is validated per chunk, so front ends of models that compare whole HITs (``Model.whole_submissions``) give
        such files in one chunk. Chunk k + 1 is validated in a thread (:class:`core.store.ahead.ReadAhead`) while
        chunk k is written.

        ``defer_live`` (for large inputs, :data:`core.store.deferred.LARGE_INPUT_BYTES`; not for models that
        compare whole submissions): the live index is built at the end, in one pass (:mod:`core.store.deferred`).
        The result is the same, except that a refused input then lists every conflict between its chunks, also
        those after its first invalid row.
        """
        import pandas as pd

        run = _Chunks(source=source, name=source)
        whole = self._settings.model.whole_submissions  # (such files come whole: a HIT's rows are never cut)
        with (
            ExitStack() as stack,
            self._db.writing() as conn,
            read_only(self._db.path) as reader,
            ReadAhead(self._validated(chunks, run, reader, not whole)) as ahead,
        ):
            # the reader's snapshots are taken under this write lock: the HITs it reads are those committed before
            # this transaction, which changes no more than open HITs to complete (validation reads retractions)
            try:
                self._catalog.item_index()
                run.since = max_seq(conn) + 1
                if defer_live and not whole:
                    run.places = stack.enter_context(closing(Places()))
                    stack.enter_context(pragmas(conn, cache_size=-DEFERRED_CACHE_KIB))
                    # the live index holds only keys live before the ingest: none to look up in a project without any
                    run.look_up = conn.execute("SELECT EXISTS (SELECT 1 FROM live)").fetchone()[0] == 1
            finally:
                run.indexed.set()
            for chunk in ahead:
                self._take_chunk(conn, run, chunk, skip_invalid, ahead.go_on)
            if run.places is not None:
                self._settle(conn, run, run.places)
            report = run.report
            report.rejected = len(run.messages)
            if run.rejects:
                report.rejects = pd.concat(run.rejects, ignore_index=True)
            if run.messages and not skip_invalid:
                raise _refused(run.name, run.messages, report.n_rows)
            report.rebuilt = self._finish(conn, run.carry) or report.rebuilt
            if report.rejected:
                record_rejects(conn, report.rejects, source)
            if before_commit is not None:
                before_commit(report)
        return report

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
        """Validate a file whole, then append it in slices of at least ``rows`` rows, one transaction each, calling
        ``pause`` between them (:mod:`core.store.slices`), so that another writer gets the write lock. ``read()``
        gives the file's chunks (:func:`core.tables.iter_table`) and is called twice. The report, the rejects and
        the project are those of :meth:`ingest_chunks`; the same ingest again completes a killed one. For the aware
        model a slice also holds at least a quarter of the live scores, so that the refits ending the slices cost a
        bounded multiple of one (``Model.slice_rows``). ``defer_live``: as in :meth:`ingest_chunks`, per slice.

        Raises :class:`InvalidRows` before anything is written when a row is invalid and ``skip_invalid`` is
        False, or when a slice meets a row that became invalid since the check (its HIT retracted meanwhile),
        saying which slices are ingested.
        """
        import pandas as pd

        from easl_toolkit.core.store.slices import check_input, kept_rows, slices

        with read_only(self._db.path) as reader:

            def validate(frame: pd.DataFrame, locations: Locations) -> Batch:
                return self._validate(reader, frame, locations)

            checked = check_input(read(), source, validate)
            if checked.messages and not skip_invalid:
                raise _refused(checked.name, checked.messages, checked.n_rows)
            with self._db.reading() as conn:
                live = conn.execute("SELECT COUNT(*) FROM live").fetchone()[0]
            report = IngestReport(n_rows=checked.n_rows, duplicate=checked.duplicate, transactions=0)
            rejects: list[pd.DataFrame] = []

            def size() -> int:
                return int(self._settings.model.slice_rows(rows, live + report.new))

            for k, part in enumerate(slices(kept_rows(read(), checked, source, validate), size)):
                if k:  # readers never let a passive checkpoint finish: the WAL would grow with every slice
                    self._db.checkpoint("RESTART")
                if k and pause is not None:
                    pause()
                try:
                    done = self.ingest_chunks(part, source=source, skip_invalid=skip_invalid, defer_live=defer_live)
                except InvalidRows as exc:
                    note = f" ({k} slices of {checked.name} were ingested before it)" if k else ""
                    raise InvalidRows(f"{exc}{note}", messages=exc.messages, path=exc.path) from None
                report.new += done.new
                report.duplicate += done.duplicate
                report.superseded += done.superseded
                report.transactions = k + 1
                rejects += [done.rejects] if len(done.rejects) else []
        if checked.rejects:
            with self._db.writing() as conn:
                record_rejects(conn, pd.concat(checked.rejects, ignore_index=True), source)
        if checked.rejects or rejects:
            report.rejects = pd.concat(checked.rejects + rejects, ignore_index=True)
        report.rejected = len(report.rejects)
        return report

    def _validated(
        self, chunks: Iterable[Any], run: _Chunks, reader: sqlite3.Connection, head: bool
    ) -> Iterator[tuple[int, Batch, LogRows, str, bool]]:
        """The chunks of :meth:`ingest_chunks` normalised and validated in the read-ahead thread (read-only connection
        ``reader``): ``(rows, batch, log rows, name, last)`` each, ``last`` when no chunk follows. With ``head``, a
        large first chunk comes in two parts, the first :data:`FIRST_PART` rows on their own."""
        from easl_toolkit.core.store.cells import frame_part
        from easl_toolkit.core.store.validation import normalize_rows

        chunks = iter(chunks)
        chunk = next(chunks, None)
        while chunk is not None:
            frame, locations, name = normalize_rows(chunk, run.source)
            run.indexed.wait()
            if self._catalog.index is None:  # reading them failed: the ingest is ending
                return
            parts = [(frame, locations)]
            if head and len(frame) > 2 * FIRST_PART:
                cut = [(0, FIRST_PART), (FIRST_PART, len(frame))]
                parts = [(frame_part(frame, a, b), locations.part(a, b)) for a, b in cut]
            head = False
            for k, (rows, at) in enumerate(parts):
                batch = self._validate(reader, rows, at)
                made = log_rows(batch.valid, look_up=run.look_up)
                if k == len(parts) - 1:
                    chunk = next(chunks, None)
                yield len(rows), batch, made, name, chunk is None

    def _take_chunk(
        self,
        conn: sqlite3.Connection,
        run: _Chunks,
        chunk: tuple[int, Batch, LogRows, str, bool],
        skip_invalid: bool,
        staged: Callable[[], None],
    ) -> None:
        """Append one validated chunk of :meth:`ingest_chunks` and add up its counts, rejects and messages.

        Conflicts with an earlier chunk are found by the lookup of live observations that appending does anyway (a
        log position >= ``run.since``). After a reject without ``skip_invalid`` nothing is kept, but the rows are
        still looked up so that every conflict is listed. The last chunk of an ingest with no reject so far starts
        the aware refit early (:meth:`_append`)."""
        n_rows, batch, rows, name, last = chunk
        report = run.report
        report.n_rows, run.name = report.n_rows + n_rows, name
        if len(batch.rejects):
            run.rejects.append(batch.rejects)
            run.messages.extend(batch.messages)
        part = IngestReport()
        dry = bool(run.messages) and not skip_invalid and run.places is None
        conflicts = self._append(
            conn,
            batch,
            run.source,
            part,
            since=run.since,
            dry=dry,
            carry=run.carry,
            rows=rows,
            staged=staged,
            places=run.places,
            last=last and not run.messages,
        )
        if conflicts is not None:
            run.rejects.append(conflicts[0])
            run.messages.extend(conflicts[1])
        report.new += part.new
        report.duplicate += part.duplicate
        report.superseded += part.superseded
        report.rebuilt = report.rebuilt or part.rebuilt

    def _settle(self, conn: sqlite3.Connection, run: _Chunks, places: Places) -> None:
        """Index the deferred rows of :meth:`ingest_chunks` (:func:`core.store.deferred.settle`); the later rows of
        a key they share leave the log, and their counts, state and HITs are taken back."""
        repeats = settle(conn, run.since, places)
        report, carry = run.report, run.carry
        report.new -= len(repeats.seq)
        report.duplicate += repeats.duplicate
        if repeats.messages:
            run.rejects.append(repeats.rejects)
            run.messages.extend(repeats.messages)
        if len(repeats.seq):
            from easl_toolkit.core.models import Scores

            carry.change.steps.append((-1, Scores(repeats.item_idx, repeats.score01)))
            carry.live.remove(repeats.seq)  # (they left the log)
            carry.hits |= repeats.hit_ids
            carry.complete -= repeats.hit_ids
            carry.seq = max_seq(conn)

    def _append(
        self,
        conn: sqlite3.Connection,
        batch: Batch,
        source: str,
        report: IngestReport,
        *,
        since: int | None = None,
        dry: bool = False,
        carry: Carry | None = None,
        rows: LogRows | None = None,
        staged: Callable[[], None] | None = None,
        places: Places | None = None,
        last: bool = False,
    ) -> tuple[pd.DataFrame, list[str]] | None:
        """Append the valid rows that change something (new keys, new scores for live keys) and update the state.

        ``carry``: the state and the touched HITs are carried for the caller to write once (:meth:`_finish`);
        without, they are written now. ``since``: the conflicts with an earlier chunk (:func:`_matches`) are not
        appended, and their rejects and messages are returned; ``dry``: only look for them. ``rows``: the batch's
        :func:`core.store.log_rows.log_rows` (made here when not given); ``staged``: called once they are bound
        (:meth:`core.store.ahead.ReadAhead.go_on`). ``places``: the rows are deferred (:mod:`core.store.deferred`).
        ``last``: no rows follow (the model's update may then start early:
        :meth:`core.store.derived.Replay.start_update`)."""
        report.duplicate = int(batch.valid["repeat"].sum())
        rows = log_rows(batch.valid) if rows is None else rows
        cand = rows.cand
        if len(cand) == 0:
            return None
        seq0 = max_seq(conn) + 1
        live = _matches(conn, rows, since, batch.locations)
        if dry:
            return live.conflicts
        report.duplicate += int(live.same.sum())
        report.superseded = int((~live.same).sum())
        keep = np.ones(len(cand), dtype=bool)
        keep[live.pos[live.same]] = False  # keys live with this very score (or a conflict) stay as they are
        keep[live.moved] = False
        add = cand[keep].reset_index(drop=True)
        report.new = len(add) - report.superseded
        if len(add) == 0:
            return live.conflicts
        append_log(conn, rows, None if len(add) == len(cand) else keep, seq0, now(), source)
        if staged is not None:
            staged()
        own = carry is None
        carry = Carry() if carry is None else carry
        self._carry_change(carry, add, live, seq0)
        if last and places is None and live.conflicts is None:
            carry.updating = self._replay.start_update(conn, carry.change, carry.live)
        if places is None:
            copy_to_live(conn, seq0, superseded=bool(report.superseded))
        else:
            places.add(seq0, batch.locations, cand["row"].to_numpy()[keep])
            remove_live(conn, [rows.columns[0][i] for i in live.pos[~live.same].tolist()])
        # HITs whose every item this chunk scores are complete (a score appended in an ingest stays live through
        # it: another score for its key is a conflict); marked now, while the read-ahead thread validates on
        complete = completed_hits(add)
        mark_complete(conn, sorted(complete))
        carry.complete |= complete
        if own:
            report.rebuilt = self._finish(conn, carry)
        return live.conflicts

    def _carry_change(self, carry: Carry, add: pd.DataFrame, live: _Matches, seq0: int) -> None:
        """Carry the rows ``add`` (appended at ``seq0``, superseding the live ones of ``live`` that differ) into
        ``carry``: the touched HITs and the change of the live log, the superseded scores withdrawn, then the new
        ones live (and, for a model that reads the whole live log, the live index's change)."""
        from easl_toolkit.core.models import Scores

        old = [r for r, dup in zip(live.found, live.same.tolist()) if not dup]  # the live rows superseded
        items = add["item_idx"].to_numpy(dtype=np.int64)
        s01 = add["score01"].to_numpy(dtype=np.float64)
        carry.seq = seq0 + len(add) - 1
        carry.since = seq0 if carry.since is None else carry.since
        carry.hits |= set(add["hit_id"].dropna().tolist()) | {r[4] for r in old if r[4] is not None}
        if old:
            old_item = np.asarray([r[3] for r in old], dtype=np.int64)
            old01 = np.asarray([r[2] for r in old], dtype=np.float64)
            carry.change.steps.append((-1, Scores(old_item, old01)))
        carry.change.steps.append((1, Scores(items, s01, add["group"])))
        if self._settings.model.reads_live_log:
            carry.live.add(seq0, items, add["annotator"], s01)  # (what the update reads: no read back)
            carry.live.remove(np.asarray([r[5] for r in old], dtype=np.int64))

    def _finish(self, conn: sqlite3.Connection, carry: Carry) -> bool:
        """Write what an ingest carried (:class:`core.store.batches.Carry`): the model's state after the change
        (``Model.update``, started early or now) and the status of the touched HITs not marked complete already,
        recomputed from the live index. Returns whether the model rebuilt its state from the whole log."""
        rebuilt = False
        if carry.updating is not None:  # started early (:meth:`_append`)
            updated = carry.updating.result()
        elif carry.change.steps:
            updated = self._replay.update(
                conn, carry.change, self._replay.log(conn, changes=carry.live, since=carry.since)
            )
        else:
            updated = None
        if updated is not None:
            self._replay.save_state(conn, updated.state, carry.seq)
            rebuilt = updated.rebuilt
        refresh_hits(conn, sorted(carry.hits - carry.complete))
        return rebuilt
