"""Deriving the model state from the observation log: replay, the check of the cache (``easl verify``), the rebuild,
and the state at the end of each iteration (the Monitor's convergence history).

Replay order: the live observations (the last record of each source key, when a score) in log order; the models
process HIT submissions in order of first appearance (``core.models.pair_schedule``).

Every change of the live log reaches the model through one call, :meth:`Replay.update` (``Model.update``), with
the live log as the model may read it (:class:`StoreLog`, a ``core.models.LiveLog``); the model decides how the
change becomes its state, and ``easl verify`` compares the cache with a replay as the model says
(``Model.same_state``). Annotators are numbered in order of their first score in the log (a missing annotator is
one anonymous annotator), so the numbering only grows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

import easl_toolkit.core.store.live_arrays as live_arrays
from easl_toolkit.core.store.db import Database, max_seq
from easl_toolkit.core.store.hit_rows import STATUS_SQL, refresh_hits
from easl_toolkit.core.store.items import Catalog
from easl_toolkit.core.store.live_arrays import LiveArrays, LiveChanges
from easl_toolkit.core.store.settings import Settings
from easl_toolkit.core.store.state import load_state, save_state

if TYPE_CHECKING:
    from easl_toolkit.core.models import Change, Scores, Updated

VERIFY_TOLERANCE = 1e-9
#: Aware projects: live observations up to which every refit is cold, so the cache is a function of the log alone
#: and equals its replay bit for bit (EM on small, uneven data can have several fixed points, which a warm chain and
#: a cold fit may reach apart). Above it the refit is warm-started (the ingest target at a million items) and
#: ``easl verify`` compares within ``model.same_fit``.
COLD_REFIT_UPTO = 1_000_000
_NO_ANNOTATOR = "\x00"  # the code of observations without an annotator: one anonymous annotator


def annotator_codes(conn: sqlite3.Connection) -> list[Any]:
    """Every annotator of a score in the log, in order of first appearance (``None`` for rows without one):
    position = the annotator's index in the aware model's arrays."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT annotator FROM observations WHERE kind = 'score' GROUP BY annotator ORDER BY MIN(seq)"
        )
    ]


def _code_array(annotators: Iterable[Any], names: list[Any]) -> NDArray[Any]:
    """Indices of ``annotators`` in ``names`` (:func:`annotator_codes`)."""
    import pandas as pd

    lookup = {(_NO_ANNOTATOR if n is None else n): k for k, n in enumerate(names)}
    values = pd.Series([_NO_ANNOTATOR if a is None else a for a in annotators], dtype=object)
    codes: NDArray[Any] = values.map(lookup).to_numpy(dtype=np.int64)
    return codes


def read_live_arrays(conn: sqlite3.Connection) -> LiveArrays:
    """The live log for the aware model, read from the live index and the log (:mod:`core.store.live_arrays` keeps
    it for the refits)."""
    rows = conn.execute(
        "SELECT l.seq, l.item_idx, l.score01, o.annotator FROM live l JOIN observations o ON o.seq = l.seq "
        "ORDER BY l.seq"
    ).fetchall()
    names = annotator_codes(conn)
    seq = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    item = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    s01 = np.fromiter((r[2] for r in rows), dtype=np.float64, count=len(rows))
    return LiveArrays(seq, item, _code_array([r[3] for r in rows], names), s01, names)


def live_with_annotators(conn: sqlite3.Connection) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any], list[Any]]:
    """The live log for the aware model: ``(item, annotator index, score01, annotator names)``, in log order: the
    stored arrays when they reflect the whole log (:mod:`core.store.live_arrays`), else :func:`read_live_arrays`."""
    live = live_arrays.load(conn, max_seq(conn)) or read_live_arrays(conn)
    return live.item, live.annotator, live.score01, live.names


class StoreLog:
    """The live log of a project as a model reads it (``core.models.LiveLog``), inside one transaction.

    ``whole``: the log is read from the observations alone (the last record of each source key, when a score), as a
    replay reads it, independent of the live index; else from the live index, or from the live log kept as arrays
    (:mod:`core.store.live_arrays`) with ``changes`` (what this transaction did to the live index) applied, when
    ``arrays`` and they reflect the log where the transaction started. ``since``: the first log position this
    transaction appended. ``prefetched``: the live log, read already (for an update run in a thread)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        n_items: int,
        *,
        whole: bool = False,
        arrays: bool = False,
        changes: LiveChanges | None = None,
        since: int | None = None,
        prefetched: LiveArrays | None = None,
    ) -> None:
        self._conn = conn
        self.n_items = n_items
        self._whole = whole
        self._arrays = arrays
        self._changes = changes
        self._since = since
        self.verified = True  #: (a project's state is compared with a replay by ``easl verify``)
        self.read: LiveArrays | None = prefetched  #: the live log as arrays, once read from them
        self.seqs: NDArray[Any] | None = None  #: the log positions of the live scores, once read from the whole log

    def stored(self) -> LiveArrays | None:
        """The kept arrays with this transaction's changes applied, when they reflect the log where it started."""
        changes = self._changes
        if changes is None or changes.base is None:
            return None
        cached = live_arrays.load(self._conn, changes.base)
        return live_arrays.apply(cached, changes) if cached is not None else None

    def live(self) -> Scores:
        """Every live score in log order: ``item, score01``, submission keys (from the log or the live index) and
        annotator codes (numbered by first score in the log)."""
        from easl_toolkit.core.models import Scores

        if self.read is None and self._arrays and not self._whole:
            self.read = self.stored()
            if self.read is None:
                self.read = read_live_arrays(self._conn)
        if self.read is not None:
            return Scores(self.read.item, self.read.score01, None, self.read.annotator)
        if self._whole:
            scores, self.seqs = _replayed_scores(self._conn)
            return scores
        rows = self._conn.execute(
            "SELECT l.item_idx, l.score01, l.group_key, o.annotator FROM live l JOIN observations o "
            "ON o.seq = l.seq ORDER BY l.seq"
        ).fetchall()
        item, s01, group, annotator = list(zip(*rows)) or [(), (), (), ()]
        codes = _code_array(annotator, annotator_codes(self._conn))
        return Scores(np.asarray(item, dtype=np.int64), np.asarray(s01, dtype=np.float64), group, codes)

    def appends_submissions(self) -> bool:
        """Whether no score appended by this transaction (from ``since`` on) belongs to a submission that has a
        live score from before it."""
        if self._since is None:
            return not self._whole
        row = self._conn.execute(
            "SELECT EXISTS (SELECT 1 FROM observations o JOIN live l ON l.hit_id = o.hit_id AND "
            "l.group_key = o.group_key WHERE o.seq >= ?1 AND l.seq < ?1)",
            (self._since,),
        ).fetchone()
        return bool(row[0] == 0)


def _replayed_scores(conn: sqlite3.Connection) -> tuple[Scores, NDArray[Any]]:
    """The live scores read from the whole log (the last record of each source key, if a score), in log order, with
    their submission keys and annotator codes; and their log positions."""
    import pandas as pd

    from easl_toolkit.core.models import Scores

    rows = conn.execute(
        "SELECT seq, source_key, kind = 'score', item_idx, score01, group_key, annotator FROM observations ORDER BY seq"
    ).fetchall()
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return Scores(empty, np.zeros(0), [], empty.copy()), empty.copy()
    seq, key, is_score, item, s01, group, annotator = zip(*rows)
    last = ~pd.Series(key, dtype=object).duplicated(keep="last").to_numpy()
    idx = np.flatnonzero(last & np.asarray(is_score, dtype=bool))
    at = idx.tolist()
    codes = _code_array([annotator[i] for i in at], annotator_codes(conn))
    scores = Scores(
        np.asarray(item, dtype=np.int64)[idx],
        np.asarray([s01[i] for i in at], dtype=np.float64),
        [group[i] for i in at],
        codes,
    )
    return scores, np.asarray(seq, dtype=np.int64)[idx]


class Replay:
    """The cached state derived from the log: saving it, the aware refit, replay, verification and rebuild."""

    def __init__(self, db: Database, settings: Settings, catalog: Catalog) -> None:
        self._db = db
        self._settings = settings
        self._catalog = catalog

    def state(self) -> dict[str, NDArray[Any]]:
        """The cached model state (arrays per item, on the unit scale; see ``core.models``)."""
        return load_state(self._db.conn)

    def save_state(self, conn: sqlite3.Connection, state: dict[str, NDArray[Any]], seq: int) -> None:
        """Store ``state`` as reflecting the log up to ``seq`` (:func:`core.store.state.save_state`)."""
        save_state(conn, state, seq, self._settings.model.selection_keys(state)[1])

    def log(self, conn: sqlite3.Connection, **how: Any) -> StoreLog:
        """The live log for the model's update (:class:`StoreLog`; the live log is read as arrays, and kept so,
        for a model that reads it on every change, ``Model.reads_live_log``)."""
        return StoreLog(conn, self._catalog.n_items, arrays=self._settings.model.reads_live_log, **how)

    def update(self, conn: sqlite3.Connection, change: Change, log: StoreLog) -> Updated:
        """The model's state after ``change`` (``Model.update`` on the cached state), the live log it read kept as
        arrays reflecting the log's end (:func:`keep_arrays`); the caller saves the state."""
        updated = self._settings.model.update(load_state(conn), change, log)
        keep_arrays(conn, log)
        return updated

    def start_update(self, conn: sqlite3.Connection, change: Change, changes: LiveChanges) -> Future[Updated] | None:
        """Start the model's update in a thread, before the transaction has copied its rows to the live index: for a
        model that reads the whole live log on every change (``Model.reads_live_log``) when the live log kept as
        arrays reflects where the transaction started (else None: the update waits for the end of the
        transaction). The thread does no SQL: the live log is read here and kept as reflecting the log's end."""
        from concurrent.futures import ThreadPoolExecutor

        model = self._settings.model
        log = self.log(conn, changes=changes)
        live = log.stored() if model.reads_live_log else None
        if live is None:
            return None
        ready = StoreLog(conn, self._catalog.n_items, arrays=True, prefetched=live)
        state = load_state(conn)
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="easl-update")
        started = pool.submit(model.update, state, change, ready)
        pool.shutdown(wait=False)  # (the thread ends with the update)
        keep_arrays(conn, ready)
        return started

    def annotator_table(self) -> Any:
        """Aware projects: the per-annotator diagnostics of the cached fit, one row per annotator that has live
        scores: ``annotator, n_scores, offset, slope, noise, weight, agreement, spread, flag, reason`` (offset and
        spread on the project's score range; slope, noise and weight relative; agreement is the leave-one-out
        correlation with the consensus). Raises ``ValueError`` for the other methods."""
        with self._db.reading() as conn:
            state = load_state(conn)
            item, annotator, s01, names = live_with_annotators(conn)
        frame = self._settings.model.diagnostics(state, item, annotator, s01).to_frame()
        import pandas as pd

        ids = (names + [None] * len(frame))[: len(frame)]
        frame.insert(0, "annotator", pd.Series(ids, dtype=object, index=frame.index))  # None: no annotator given
        span = self._settings.hyper.score_span
        frame["offset"] = frame["offset"] * span
        frame["spread"] = frame["spread"] * span
        frame["n_scores"] = frame["n_scores"].astype(np.int64)
        return frame[frame["n_scores"] > 0].reset_index(drop=True)

    def replay_log(self, conn: sqlite3.Connection) -> tuple[dict[str, NDArray[Any]], NDArray[Any]]:
        """Rebuild the state from the whole log: the last record of each source key, if a score, is live; the model
        replays the live observations (``Model.replay``). Returns ``(state, live seqs)``."""
        log = StoreLog(conn, self._catalog.n_items, whole=True)
        state = self._settings.model.replay(log)
        if log.seqs is None:  # (a model that read nothing of the log)
            log.live()
        assert log.seqs is not None
        return state, log.seqs

    def iteration_states(self, upto: int) -> Iterator[tuple[int, dict[str, NDArray[Any]]]]:
        """The state at the end of each iteration ``t < upto``, in order: the model's replay of the live
        observations of HITs of iterations ``<= t``, in log order, each iteration's scores a change of the state
        of the one before (a chain: not ``verified``, so an aware fit starts from the iteration before).
        Observations outside any HIT belong to no completed iteration (they count in the current one only).
        Yields ``(t, state)``; the same state object may be updated in place from one iteration to the next (copy
        it to keep it)."""
        from easl_toolkit.core.models import ArraysLog, Change, Scores

        with self._db.reading() as conn:
            live = StoreLog(conn, self._catalog.n_items).live()
            iteration = [
                r[0]
                for r in conn.execute(
                    "SELECT h.iteration FROM live l LEFT JOIN hits h ON h.hit_id = l.hit_id ORDER BY l.seq"
                )
            ]
        it_a = np.asarray([upto if t is None else t for t in iteration], dtype=np.int64)
        model = self._settings.model
        state = model.init_state(self._catalog.n_items)
        group = live.group
        for t in range(upto):
            new, upto_t = it_a == t, it_a <= t
            if new.any():
                rows = Scores(live.item[new], live.score01[new], group[new])
                codes = None if live.annotator is None else live.annotator[upto_t]
                sub = Scores(live.item[upto_t], live.score01[upto_t], group[upto_t], codes)
                state = model.update(state, Change(steps=[(1, rows)]), ArraysLog(sub, self._catalog.n_items)).state
            yield t, state

    def rebuild(self) -> dict[str, Any]:
        """Replace the cached state by a replay of the log (repairs a cache that :meth:`verify` found wrong);
        one transaction. Returns :meth:`verify`'s result after the rebuild."""
        with self._db.writing() as conn:
            state, _ = self.replay_log(conn)
            self.save_state(conn, state, max_seq(conn))
            live_arrays.clear(conn)  # the next refit reads the rebuilt live index
            conn.execute("DELETE FROM live")
            conn.execute(
                "INSERT INTO live(source_key, seq, item_idx, score01, score_raw, hit_id, annotation_id, group_key) "
                "SELECT o.source_key, o.seq, o.item_idx, o.score01, o.score_raw, o.hit_id, o.annotation_id, "
                "o.group_key FROM observations o JOIN (SELECT source_key, MAX(seq) AS seq FROM observations "
                "GROUP BY source_key) m ON m.seq = o.seq WHERE o.kind = 'score'"
            )
            refresh_hits(conn, None)
        return self.verify()

    def verify(self) -> dict[str, Any]:
        """Replay the whole log from scratch and compare with the cache.

        Returns
        -------
        dict
            ``ok`` (every check passes), ``max_abs_diff`` (largest absolute difference between the cached and the
            replayed arrays; ok within 1e-9), ``arrays`` (difference per array), ``live_ok`` (the live index equals
            the log's last score per key), ``hits_ok`` (HIT statuses agree with the live observations),
            ``seq_ok`` (the cache reflects the end of the log), ``live_arrays_ok`` (aware projects: the live log kept
            for the refits, :mod:`core.store.live_arrays`, equals the live index where it reflects the end of the
            log), ``n_observations``, ``n_log_records``.
        """
        with self._db.reading() as conn:
            replay, live_seqs = self.replay_log(conn)
            cache = load_state(conn)
            table_seqs = np.sort(np.asarray([r[0] for r in conn.execute("SELECT seq FROM live")], dtype=np.int64))
            n_log = max_seq(conn)
            state_seq = int(conn.execute("SELECT value FROM meta WHERE key = 'state_seq'").fetchone()[0])
            bad_hits = conn.execute(
                f"SELECT COUNT(*) FROM hits WHERE status != 'retracted' AND status != ({STATUS_SQL})"
            ).fetchone()[0]
            kept = live_arrays.load(conn, n_log) if self._settings.model.reads_live_log else None
            arrays_ok = kept is None or kept.same_as(read_live_arrays(conn))
        arrays: dict[str, float] = {}
        for name in sorted((set(replay) | set(cache)) - self._settings.model.bookkeeping):
            a, b = replay.get(name), cache.get(name)
            if a is None or b is None or a.shape != b.shape:
                arrays[name] = float("inf")
                continue
            both_nan = np.isnan(a) & np.isnan(b)
            diff = np.where(both_nan, 0.0, np.abs(a - b))
            arrays[name] = float(np.nan_to_num(diff, nan=np.inf).max()) if diff.size else 0.0
        max_diff = max(arrays.values()) if arrays else 0.0
        live_ok = bool(np.array_equal(np.sort(live_seqs), table_seqs))
        seq_ok = state_seq == n_log
        hits_ok = bad_hits == 0
        state_ok, note = self._settings.model.same_state(cache, replay, max_diff)
        return {
            "ok": bool(state_ok and live_ok and seq_ok and hits_ok and arrays_ok),
            "max_abs_diff": max_diff,
            "tolerance": VERIFY_TOLERANCE,
            "state_ok": state_ok,
            **({"state_tolerance": note} if note else {}),
            "arrays": arrays,
            "live_ok": live_ok,
            "seq_ok": seq_ok,
            "hits_ok": hits_ok,
            "live_arrays_ok": arrays_ok,
            "n_observations": int(live_seqs.size),
            "n_log_records": n_log,
            "method": self._settings.hyper.method,
        }


def keep_arrays(conn: sqlite3.Connection, log: StoreLog) -> None:
    """Keep the live log that ``log`` read as arrays (:mod:`core.store.live_arrays`), as reflecting the log's end."""
    if log.read is not None:
        live_arrays.save(conn, log.read, max_seq(conn))
