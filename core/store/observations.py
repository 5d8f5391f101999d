"""The append-only observation log: validating and appending scores, retracting them.

Each observation carries a source key (:mod:`core.store.validation`): ingesting the same key with the same score
changes nothing; a new score for a key appends a record that supersedes the old one; a retraction appends a
``retract`` record. The live observation of a key is its last record when that is a score; the ``live`` table
indexes them. Commutative models (EASL, DA) update the cached state incrementally (``sign = +1`` for new scores,
``-1`` for superseded or retracted ones); order-dependent models (RA, TrueSkill) apply appended submissions
incrementally and are rebuilt by replay (:mod:`core.store.replay`) after a supersede or a retraction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from core.errors import InvalidRows, ProjectFileError
from core.store.db import fill_temp, max_seq, now, read_columns
from core.store.hits import Hits, refresh_hits
from core.store.state import load_state

if TYPE_CHECKING:
    import pandas as pd

    from core.store.validation import Batch


@dataclass
class IngestReport:
    """What :meth:`Observations.ingest` did.

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
    rejects: Any = None
    rebuilt: bool = False

    def __post_init__(self) -> None:
        if self.rejects is None:
            import pandas as pd

            self.rejects = pd.DataFrame()

    def as_dict(self) -> dict[str, Any]:
        """The counts as a JSON-ready dict."""
        return {
            "rows": self.n_rows,
            "new": self.new,
            "duplicate": self.duplicate,
            "superseded": self.superseded,
            "rejected": self.rejected,
            "rebuilt": self.rebuilt,
        }


@dataclass(frozen=True)
class Prepared:
    """Annotation rows validated by :meth:`Observations.prepare`, to pass to :meth:`Observations.ingest`.

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
    locations: NDArray[Any]
    batch: Batch
    hit_ids: list[str]
    fingerprint: tuple[Any, ...]


def _named_hits(frame: pd.DataFrame) -> list[str]:
    """The distinct HIT ids a batch of annotation rows names."""
    import pandas as pd

    from core.store.validation import id_strings

    ids = id_strings(frame["hit_id"]).to_numpy(dtype=object)
    return [str(h) for h in pd.unique(ids[pd.notna(ids)]).tolist()]


def _hit_fingerprint(conn: sqlite3.Connection, ids: list[str]) -> tuple[Any, ...]:
    """What validation reads of the project besides fixed data: which of ``ids`` exist and are retracted."""
    if not ids:
        return ()
    return tuple(
        conn.execute(
            "SELECT hit_id, status = 'retracted' FROM hits WHERE hit_id IN "
            "(SELECT value FROM json_each(?)) ORDER BY hit_id",
            (json.dumps(ids),),
        ).fetchall()
    )


def _record_rejects(conn: sqlite3.Connection, rejects: pd.DataFrame, source: str) -> None:
    """Add rejected rows, with their reasons, to the ``rejects`` table."""
    n = len(rejects)
    payload = (
        rejects[["item_id", "score", "hit_id", "annotator", "annotation_id"]]
        .to_json(orient="records", lines=True, force_ascii=False, default_handler=str)
        .splitlines()
    )
    conn.executemany(
        "INSERT INTO rejects(created_at, source, location, reason, payload) VALUES (?, ?, ?, ?, ?)",
        zip(
            [now()] * n,
            [source] * n,
            rejects["location"].tolist(),
            (rejects["field"] + ": " + rejects["reason"]).tolist(),
            payload,
        ),
    )


def _conflict_rejects(moved: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The rejects (and their messages) of valid rows whose key got a different score from an earlier chunk of the
    same input."""
    import pandas as pd

    has_ann = moved["annotation_id"].notna().to_numpy()
    reasons = np.where(
        has_ann,
        "conflicts with an earlier row of the same input (same annotation_id and item, different score)",
        "conflicts with an earlier row of the same input (same item, HIT and annotator, different "
        "score); give each score an annotation_id or an annotator",
    )
    extra = pd.DataFrame(
        {
            "location": moved["location"].to_numpy(),
            "field": "score",
            "reason": reasons,
            "item_id": moved["item_id"].to_numpy(),
            "score": moved["score_raw"].to_numpy(),
            "hit_id": moved["hit_id"].to_numpy(),
            "annotator": moved["annotator"].to_numpy(),
            "annotation_id": moved["annotation_id"].to_numpy(),
        }
    )
    return extra, [f"{loc}: score: {why}" for loc, why in zip(extra["location"], extra["reason"])]


_STAGE_COLUMNS = ("source_key", "item_idx", "score_raw", "hit_id", "annotator", "annotation_id", "created_at")
#: the stage's derived columns, as in core.store.validation (``score01 = clip((score_raw - score_min) / span, 0,
#: 1)`` in IEEE double arithmetic, as numpy computes it; the group key of the submission), with the score range bound
#: once per statement as ``:lo`` and ``:span``
_DERIVED_SQL = (
    "MIN(MAX((score_raw - :lo) / :span, 0.0), 1.0), "
    "CASE WHEN annotation_id IS NOT NULL THEN 'a' || char(31) || annotation_id "
    "WHEN hit_id IS NOT NULL THEN 'h' || char(31) || hit_id || char(31) || COALESCE(annotator, '') ELSE '' END"
)


def _stage(conn: sqlite3.Connection, cand: pd.DataFrame, seq0: int) -> None:
    """(Re)fill ``temp._stage`` with the rows of ``cand`` in key order (rowid order = ``source_key`` order: the
    lookup of the live observations and the live inserts then walk the live B-trees in order, far fewer page reads
    than random order once they outgrow the page cache); ``seq`` = ``seq0`` + the row's position in ``cand``. Only
    the columns given by the input are bound (each bound value costs; ``score01`` and ``group_key`` are derived in
    SQL, :data:`_DERIVED_SQL`)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = cand["source_key"].to_numpy(dtype=object)
    order = pc.sort_indices(pa.array(keys, type=pa.string())).to_numpy()  # stable
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS _stage (seq INTEGER NOT NULL, source_key TEXT NOT NULL, item_idx INTEGER, "
        "score_raw REAL, hit_id TEXT, annotator TEXT, annotation_id TEXT, created_at TEXT)"
    )
    conn.execute("DELETE FROM temp._stage")
    names = ["seq"]
    columns = [(order + seq0).tolist()]
    for name in _STAGE_COLUMNS:
        col = cand[name].to_numpy()
        if col.dtype == object and name != "source_key" and not pd.notna(col).any():
            continue  # all missing: NULL
        names.append(name)
        columns.append(col[order].tolist())
    conn.executemany(
        f"INSERT INTO temp._stage({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", zip(*columns)
    )


class Observations(Hits):
    """Validation, ingestion and retraction (mixed into :class:`core.store.Project`)."""

    if TYPE_CHECKING:  # defined by core.store.replay.Replay

        def _refit(self, conn: sqlite3.Connection) -> dict[str, NDArray[Any]]: ...

        def _replay(self, conn: sqlite3.Connection) -> tuple[dict[str, NDArray[Any]], NDArray[Any]]: ...

        def _save_state(self, conn: sqlite3.Connection, state: dict[str, NDArray[Any]], seq: int) -> None: ...

    def _hits_frame(self, conn: sqlite3.Connection, ids: Iterable[str]) -> pd.DataFrame:
        import pandas as pd

        ids = sorted({h for h in ids if h is not None})
        if not ids:
            return pd.DataFrame(
                {
                    "hit_id": pd.Series([], dtype=object),
                    "status": pd.Series([], dtype=object),
                    "item_idx": pd.Series([], dtype=np.int64),
                }
            )
        hit_id, status, item_idx = read_columns(
            conn,
            "SELECT h.hit_id, h.status, hi.item_idx FROM hits h JOIN hit_items hi ON hi.hit_no = h.hit_no "
            "WHERE h.hit_id IN (SELECT value FROM json_each(?)) ORDER BY h.hit_id, hi.position",
            ["hit_id", "status", "item_idx"],
            (json.dumps(ids),),
        )
        return pd.DataFrame(
            {
                "hit_id": pd.Series(hit_id, dtype=object),
                "status": pd.Series(status, dtype=object),
                "item_idx": np.asarray(item_idx, dtype=np.int64),
            }
        )

    def validate(self, rows: Any, *, source: str) -> Batch:
        """Validate annotation rows without writing anything (see :mod:`core.store.validation`)."""
        from core.store.validation import normalize_rows

        frame, locations, _ = normalize_rows(rows, source)
        with self._reading() as conn:
            return self._validate(conn, frame, locations)

    def prepare(self, rows: Any, *, source: str) -> Prepared:
        """Validate annotation rows under a read snapshot, outside any write transaction, for a later
        :meth:`ingest` (which then skips validation if the HITs the rows name are as they were).

        Validation depends on the project only through the item ids (fixed), the items of each HIT (fixed) and
        which of the named HITs exist and which are retracted; :meth:`ingest` re-reads those inside its
        transaction and validates again if they changed, so the result is the same as ``ingest(rows)``. A front
        end that serialises writers (the Label Studio worker) thus holds the write lock for the append only.
        """
        from core.store.validation import normalize_rows

        frame, locations, name = normalize_rows(rows, source)
        named = _named_hits(frame)
        with self._reading() as conn:
            batch = self._validate(conn, frame, locations, named)
            fingerprint = _hit_fingerprint(conn, named)
        return Prepared(
            path=self.path,
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
        locations: NDArray[Any],
        named: list[str] | None = None,
    ) -> Batch:
        from core.store.validation import validate

        hits = self._hits_frame(conn, _named_hits(frame) if named is None else named)
        return validate(
            frame,
            locations,
            item_index=self.item_index(),
            hits=hits,
            score_min=self.hyper.score_min,
            score_max=self.hyper.score_max,
            needs_whole_hit=self.model.needs_whole_hit,
            method=self.hyper.method,
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
        from core.store.validation import normalize_rows

        prepared = rows if isinstance(rows, Prepared) else None
        if prepared is not None:
            if prepared.path != self.path:
                raise ValueError(f"ingest: rows prepared for {prepared.path}, not {self.path}.")
            frame, locations, name = prepared.frame, prepared.locations, prepared.name
        else:
            frame, locations, name = normalize_rows(rows, source)
        report = IngestReport(n_rows=len(frame))
        with self._writing() as conn:
            if prepared is not None and _hit_fingerprint(conn, prepared.hit_ids) == prepared.fingerprint:
                batch = prepared.batch
            else:
                batch = self._validate(conn, frame, locations)
            report.rejects = batch.rejects
            report.rejected = len(batch.rejects)
            if report.rejected and not skip_invalid:
                raise InvalidRows(
                    f"{name}: {report.rejected} of {len(frame)} rows are invalid, so nothing was "
                    f"ingested:\n  " + "\n  ".join(batch.messages),
                    messages=batch.messages,
                    path=name,
                )
            if report.rejected:
                _record_rejects(conn, batch.rejects, source)
            self._append(conn, batch.valid, source, report)
        return report

    def ingest_chunks(
        self,
        chunks: Iterable[Any],
        *,
        source: str,
        skip_invalid: bool = False,
        before_commit: Callable[[IngestReport], None] | None = None,
    ) -> IngestReport:
        """Validate and append annotation rows given in chunks (e.g. :func:`core.tables.iter_table`), all in one
        transaction, so that memory stays flat whatever the file size and the result is all or nothing.

        Each chunk is validated as :meth:`ingest` validates a batch; across chunks, a row whose key was given a
        different score earlier in the same input is a conflict (rejected), the same score a duplicate. When a
        row is invalid and ``skip_invalid`` is False, the remaining chunks are still validated (so that every bad
        row is listed) and :class:`InvalidRows` is raised: nothing is written. ``before_commit`` is called with
        the report inside the transaction (e.g. to write the rejects file): if it raises, nothing is written.
        A submission (HIT) whose rows fall in two chunks is validated per chunk, so front ends of methods that
        compare whole HITs (``Model.needs_whole_hit``) give such files in one chunk.
        """
        import pandas as pd

        from core.store.validation import normalize_rows

        report = IngestReport()
        rejects: list[pd.DataFrame] = []
        messages: list[str] = []
        name = source
        with self._writing() as conn:
            since = max_seq(conn) + 1
            for chunk in chunks:
                frame, locations, name = normalize_rows(chunk, source)
                report.n_rows += len(frame)
                batch = self._validate(conn, frame, locations)
                if len(batch.rejects):
                    rejects.append(batch.rejects)
                    messages.extend(batch.messages)
                part = IngestReport()
                # a row whose key got a different score from an earlier chunk is a conflict: found by the lookup
                # of the live observations that appending does anyway (a log position >= since), and rejected;
                # after a reject without skip_invalid nothing is kept (the transaction is rolled back), but the
                # rows are still looked up so that every conflict is listed
                conflicts = self._append(
                    conn, batch.valid, source, part, since=since, dry=bool(messages) and not skip_invalid
                )
                if conflicts is not None:
                    rejects.append(conflicts[0])
                    messages.extend(conflicts[1])
                report.new += part.new
                report.duplicate += part.duplicate
                report.superseded += part.superseded
                report.rebuilt = report.rebuilt or part.rebuilt
            report.rejected = len(messages)
            if rejects:
                report.rejects = pd.concat(rejects, ignore_index=True)
            if messages and not skip_invalid:
                raise InvalidRows(
                    f"{name}: {len(messages)} of {report.n_rows} rows are invalid, so nothing was "
                    f"ingested:\n  " + "\n  ".join(messages),
                    messages=messages,
                    path=name,
                )
            if report.rejected:
                _record_rejects(conn, report.rejects, source)
            if before_commit is not None:
                before_commit(report)
        return report

    def _append(
        self,
        conn: sqlite3.Connection,
        valid: pd.DataFrame,
        source: str,
        report: IngestReport,
        *,
        since: int | None = None,
        dry: bool = False,
    ) -> tuple[pd.DataFrame, list[str]] | None:
        """Append the valid rows that change something (new keys, new scores for live keys) and update the state.

        With ``since`` (a log position), a row whose key has a live score appended at ``since`` or later that
        differs is a conflict with an earlier chunk of the same input: it is not appended, and its reject and
        message are returned. ``dry``: only look for such conflicts (nothing is appended)."""
        import pandas as pd

        report.duplicate = int(valid["repeat"].sum())
        cand = valid[~valid["repeat"].to_numpy()].reset_index(drop=True)
        if len(cand) == 0:
            return None
        # every candidate row is staged once (one pass of parameters, in key order: :func:`_stage`); the log and
        # the live index are then written from the stage by INSERT ... SELECT. ``seq`` is the log position if every
        # candidate is appended (renumbered below when some are not).
        seq0 = max_seq(conn) + 1
        stamp = now()
        _stage(conn, cand, seq0)
        found = conn.execute(
            "SELECT s.seq, l.score_raw, l.score01, l.item_idx, l.hit_id, l.seq FROM temp._stage s "
            "JOIN live l ON l.source_key = s.source_key ORDER BY s.rowid"
        ).fetchall()
        pos = np.asarray([r[0] for r in found], dtype=np.int64) - seq0
        old_raw = np.asarray([r[1] for r in found], dtype=np.float64)
        same = old_raw == cand["score_raw"].to_numpy()[pos]
        conflicts = None
        moved = np.zeros(0, dtype=np.int64)  # positions of conflicts with an earlier chunk: neither kept nor live
        if since is not None:
            clash = ~same & (np.asarray([r[5] for r in found], dtype=np.int64) >= since)
            if clash.any():
                moved = pos[clash]
                conflicts = _conflict_rejects(cand.iloc[moved])
                found = [r for r, c in zip(found, clash.tolist()) if not c]
                pos, old_raw, same = pos[~clash], old_raw[~clash], same[~clash]
        if dry:
            return conflicts
        old01 = np.asarray([r[2] for r in found], dtype=np.float64)
        old_item = np.asarray([r[3] for r in found], dtype=np.int64)
        report.duplicate += int(same.sum())
        report.superseded = int((~same).sum())
        keep = np.ones(len(cand), dtype=bool)
        keep[pos[same]] = False
        keep[moved] = False
        add = cand[keep].reset_index(drop=True)
        report.new = len(add) - report.superseded
        if len(add) == 0:
            return conflicts
        if len(add) < len(cand):  # keys live with this very score (or a conflict) stay as they are: unstage them
            dropped = np.flatnonzero(~keep) + seq0
            conn.execute(
                "DELETE FROM temp._stage WHERE seq IN (SELECT value FROM json_each(?))", (json.dumps(dropped.tolist()),)
            )
            conn.execute(
                "UPDATE temp._stage SET seq = r.n FROM (SELECT rowid AS k, ? + ROW_NUMBER() OVER (ORDER BY seq) - 1 "
                "AS n FROM temp._stage) r WHERE temp._stage.rowid = r.k",
                (seq0,),
            )
        # order-dependent models: appending whole new submissions at the end of the log is incremental
        group_seen = False
        if self.model.order_dependent and report.superseded == 0:
            # such methods require a hit_id, so a submission's earlier rows are found through the live_hit index
            pairs = add[["hit_id", "group_key"]].drop_duplicates()
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS _groups (hit_id TEXT, group_key TEXT)")
            conn.execute("DELETE FROM temp._groups")
            conn.executemany(
                "INSERT INTO temp._groups(hit_id, group_key) VALUES (?, ?)",
                zip(pairs["hit_id"].tolist(), pairs["group_key"].tolist()),
            )
            group_seen = (
                conn.execute(
                    "SELECT EXISTS (SELECT 1 FROM temp._groups g JOIN live l ON "
                    "l.hit_id = g.hit_id AND l.group_key = g.group_key)"
                ).fetchone()[0]
                == 1
            )
        seqs = np.arange(seq0, seq0 + len(add), dtype=np.int64)
        conn.execute(
            "INSERT INTO observations(seq, source_key, kind, item_idx, score01, "
            "group_key, annotation_id, annotator, hit_id, score_raw, created_at, source) SELECT seq, source_key, "
            f"'score', item_idx, {_DERIVED_SQL}, annotation_id, annotator, hit_id, score_raw, "
            "COALESCE(created_at, :stamp), :source FROM temp._stage ORDER BY seq",
            {"lo": self.hyper.score_min, "span": self.hyper.score_span, "stamp": stamp, "source": source},
        )
        # a superseded key's live row is replaced (the unique index on source_key)
        conn.execute(
            "INSERT OR REPLACE INTO live(source_key, seq, item_idx, score01, group_key, score_raw, hit_id, "
            f"annotation_id) SELECT source_key, seq, item_idx, {_DERIVED_SQL}, score_raw, hit_id, annotation_id "
            "FROM temp._stage ORDER BY rowid",
            {"lo": self.hyper.score_min, "span": self.hyper.score_span},
        )
        # model state
        items = add["item_idx"].to_numpy(dtype=np.int64)
        s01 = add["score01"].to_numpy(dtype=np.float64)
        if self.model.order_dependent:  # the submissions, in order of first appearance
            groups = pd.factorize(add["group_key"])[0].astype(np.int64)
        else:  # commutative models ignore them
            groups = np.zeros(len(add), dtype=np.int64)
        if getattr(self.model, "refit_on_change", False):  # aware: a warm refit of the live log (core.store.replay)
            state = self._refit(conn)
        elif self.model.order_dependent:
            if report.superseded or group_seen:
                state = self._replay(conn)[0]
                report.rebuilt = True
            else:
                state = load_state(conn)
                self.model.apply(state, items, s01, groups)
        else:
            state = load_state(conn)
            if report.superseded:
                sup = ~same
                self.model.apply(state, old_item[sup], old01[sup], np.zeros(int(sup.sum()), dtype=np.int64), sign=-1)
            self.model.apply(state, items, s01, groups)
        self._save_state(conn, state, int(seqs[-1]))
        old_hits = {r[4] for r, dup in zip(found, same.tolist()) if not dup and r[4] is not None}
        refresh_hits(conn, sorted(set(add["hit_id"].dropna().tolist()) | old_hits))
        return conflicts

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
        with self._writing() as conn:
            fill_temp(conn, "_ann_ids", ids)
            return self._retract_where(conn, "l.annotation_id IN (SELECT v FROM temp._ann_ids)", (), source)

    def retract_hit(self, hit_id: str, *, source: str) -> int:
        """Withdraw a HIT (e.g. its Label Studio task was deleted): retract its live observations and mark it
        ``retracted`` so that it no longer counts toward the completion of its iteration. One transaction.
        Returns the number of observations retracted.

        Raises ``ProjectFileError`` when the project has no such HIT."""
        with self._writing() as conn:
            row = conn.execute("SELECT status FROM hits WHERE hit_id = ?", (hit_id,)).fetchone()
            if row is None:
                raise ProjectFileError(self.path, f"unknown HIT {hit_id!r}")
            n = self._retract_where(conn, "l.hit_id = ?", (hit_id,), source)
            conn.execute("UPDATE hits SET status = 'retracted' WHERE hit_id = ?", (hit_id,))
            return n

    def _retract_where(self, conn: sqlite3.Connection, where: str, params: tuple[Any, ...], source: str) -> int:
        rows = conn.execute(
            f"SELECT l.source_key, l.item_idx, l.score01, l.hit_id FROM live l WHERE {where} ORDER BY l.seq", params
        ).fetchall()
        if not rows:
            return 0
        stamp = now()
        seq0 = max_seq(conn) + 1
        conn.execute(
            "INSERT INTO observations(seq, source_key, kind, item_idx, score01, score_raw, hit_id, annotator, "
            "annotation_id, group_key, created_at, source) "
            f"SELECT ? + ROW_NUMBER() OVER (ORDER BY l.seq) - 1, o.source_key, 'retract', o.item_idx, NULL, NULL, "
            f"o.hit_id, o.annotator, o.annotation_id, o.group_key, ?, ? FROM live l JOIN observations o "
            f"ON o.seq = l.seq WHERE {where} ORDER BY l.seq",
            (seq0, stamp, source) + params,
        )
        conn.execute(f"DELETE FROM live WHERE source_key IN (SELECT l.source_key FROM live l WHERE {where})", params)
        item = np.asarray([r[1] for r in rows], dtype=np.int64)
        s01 = np.asarray([r[2] for r in rows], dtype=np.float64)
        if getattr(self.model, "refit_on_change", False):  # aware: refit without the retracted rows
            state = self._refit(conn)
        elif self.model.order_dependent:
            state = self._replay(conn)[0]
        else:
            state = load_state(conn)
            self.model.apply(state, item, s01, np.zeros(item.size, dtype=np.int64), sign=-1)
        self._save_state(conn, state, max_seq(conn))
        refresh_hits(conn, sorted({r[3] for r in rows if r[3] is not None}))
        return len(rows)
