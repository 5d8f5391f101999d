"""Deriving the model state from the observation log: replay, the check of the cache (``easl verify``), the rebuild,
and the state at the end of each iteration (the Monitor's convergence history).

Replay order: the live observations (the last record of each source key, when a score) in log order; the models
process HIT submissions in order of first appearance (``core.models.pair_schedule``).

The annotator-aware model (``aware``, ``model.refit_on_change``) is instead a fit of the whole live log with
annotator ids (:meth:`Replay.refit`), in the transaction of each ingest or retraction; a replay is a cold fit, which
``easl verify`` compares with the cache within ``model.same_fit`` (a warm chain and a cold fit meet only within the
fit's tolerance). Annotators are numbered in order of their first score in the log (a missing annotator is one
anonymous annotator), so the numbering only grows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from typing import Any

import numpy as np
from numpy.typing import NDArray

import core.store.live_arrays as live_arrays
from core.store.db import Database, max_seq
from core.store.hit_rows import STATUS_SQL, refresh_hits
from core.store.items import Catalog
from core.store.live_arrays import LiveArrays, LiveChanges
from core.store.settings import Settings
from core.store.state import load_state, save_state

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


def _group_codes(keys: Iterable[Any]) -> NDArray[Any]:
    """Integer codes of the submission (group) keys, in order of first appearance."""
    import pandas as pd

    codes: NDArray[Any] = pd.factorize(pd.Series(list(keys), dtype=object))[0].astype(np.int64)
    return codes


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

    def refit(self, conn: sqlite3.Connection, changes: LiveChanges | None = None) -> dict[str, NDArray[Any]]:
        """The aware model refitted to the live log (the caller saves it): :meth:`start_refit`, awaited."""
        started = self.start_refit(conn, changes)
        assert started is not None
        return started.result()

    def start_refit(
        self, conn: sqlite3.Connection, changes: LiveChanges | None = None, *, stored_only: bool = False
    ) -> Future[dict[str, NDArray[Any]]] | None:
        """Start refitting the aware model to the live log: a cold fit up to :data:`COLD_REFIT_UPTO` live
        observations, then warm-started from the cached state. The result comes from a thread, which does no SQL.

        The live log is the stored arrays (:mod:`core.store.live_arrays`) with ``changes`` (what this transaction
        did to the live index) applied, when they reflect the log where it started; else it is read from the live
        index (``stored_only``: then nothing starts, and None is returned, for a caller that has not copied its
        rows to the live index yet). Either way it is stored again, as reflecting the log's end, while the fit
        runs."""
        from concurrent.futures import ThreadPoolExecutor

        cached = live_arrays.load(conn, changes.base) if changes is not None and changes.base is not None else None
        live = live_arrays.apply(cached, changes) if cached is not None and changes is not None else None
        if live is None and stored_only:
            return None
        live = read_live_arrays(conn) if live is None else live
        warm = load_state(conn) if live.seq.size > COLD_REFIT_UPTO else None
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="easl-refit")
        started = pool.submit(
            self._settings.model.refit, warm, live.item, live.annotator, live.score01, n_items=self._catalog.n_items
        )
        pool.shutdown(wait=False)  # (the thread ends with the fit)
        live_arrays.save(conn, live, max_seq(conn))
        return started

    def annotator_table(self) -> Any:
        """Aware projects: the per-annotator diagnostics of the cached fit, one row per annotator that has live
        scores: ``annotator, n_scores, offset, slope, noise, weight, agreement, spread, flag, reason`` (offset and
        spread on the project's score range; slope, noise and weight relative; agreement is the leave-one-out
        correlation with the consensus). Raises ``ValueError`` for the other methods."""
        if not self._settings.refits:
            raise ValueError(f"annotator diagnostics need the method aware, not {self._settings.hyper.method}")
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
        """Rebuild the state from the whole log: the last record of each source key, if a score, is live; live
        observations are applied in log order. Returns ``(state, live seqs)``."""
        import pandas as pd

        rows = conn.execute(
            "SELECT seq, source_key, kind = 'score', item_idx, score01, group_key, annotator "
            "FROM observations ORDER BY seq"
        ).fetchall()
        state = self._settings.model.init_state(self._catalog.n_items)
        if not rows:
            return state, np.zeros(0, dtype=np.int64)
        seq, key, is_score, item, s01, group, annotator = zip(*rows)
        last = ~pd.Series(key, dtype=object).duplicated(keep="last").to_numpy()
        live = last & np.asarray(is_score, dtype=bool)
        idx = np.flatnonzero(live)
        item_a = np.asarray(item, dtype=np.int64)[idx]
        s01_a = np.asarray([s01[i] for i in idx.tolist()], dtype=np.float64)
        if self._settings.refits:  # a cold fit, annotators numbered by first score in the log
            codes = _code_array([annotator[i] for i in idx.tolist()], annotator_codes(conn))
            state = self._settings.model.refit(None, item_a, codes, s01_a, n_items=self._catalog.n_items)
            return state, np.asarray(seq, dtype=np.int64)[idx]
        groups = _group_codes([group[i] for i in idx.tolist()])
        self._settings.model.apply(state, item_a, s01_a, groups)
        return state, np.asarray(seq, dtype=np.int64)[idx]

    def iteration_states(self, upto: int) -> Iterator[tuple[int, dict[str, NDArray[Any]]]]:
        """The state at the end of each iteration ``t < upto``, in order: the replay of the live observations of
        HITs of iterations ``<= t``, in log order. Observations outside any HIT belong to no completed iteration
        (they count in the current one only). Yields ``(t, state)``; the same state object is updated in place
        from one iteration to the next (copy it to keep it)."""
        if self._settings.refits:
            yield from self._aware_iteration_states(upto)
            return
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT l.item_idx, l.score01, l.group_key, h.iteration FROM live l "
                "LEFT JOIN hits h ON h.hit_id = l.hit_id ORDER BY l.seq"
            ).fetchall()
        state = self._settings.model.init_state(self._catalog.n_items)
        item, s01, group, iteration = list(zip(*rows)) or [(), (), (), ()]
        item_a = np.asarray(item, dtype=np.int64)
        s01_a = np.asarray(s01, dtype=np.float64)
        groups = _group_codes(group)
        it_a = np.asarray([upto if t is None else t for t in iteration], dtype=np.int64)
        for t in range(upto):
            sel = it_a == t
            if sel.any():
                self._settings.model.apply(state, item_a[sel], s01_a[sel], groups[sel])
            yield t, state

    def _aware_iteration_states(self, upto: int) -> Iterator[tuple[int, dict[str, NDArray[Any]]]]:
        """:meth:`iteration_states` of the aware model: a fit of the live scores of iterations ``<= t``, each
        warm-started from the previous one."""
        with self._db.reading() as conn:
            item, annotator, s01, _ = live_with_annotators(conn)
            iteration = [
                r[0]
                for r in conn.execute(
                    "SELECT h.iteration FROM live l LEFT JOIN hits h ON h.hit_id = l.hit_id ORDER BY l.seq"
                )
            ]
        it_a = np.asarray([upto if t is None else t for t in iteration], dtype=np.int64)
        state = self._settings.model.init_state(self._catalog.n_items)
        for t in range(upto):
            sel = it_a <= t
            if sel.any() and (t == 0 or (it_a == t).any()):
                state = self._settings.model.refit(
                    state, item[sel], annotator[sel], s01[sel], n_items=self._catalog.n_items
                )
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
            kept = live_arrays.load(conn, n_log) if self._settings.refits else None
            arrays_ok = kept is None or kept.same_as(read_live_arrays(conn))
        arrays: dict[str, float] = {}
        counters = {"sweeps"} if self._settings.refits else set()  # EM sweeps: how the fit got there, not the state
        for name in sorted((set(replay) | set(cache)) - counters):
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
        note = None
        if self._settings.refits:  # a warm chain and a cold fit agree within the fit's tolerance (model.same_fit)
            from core.models.aware_model import VERIFY_TOLERANCE as SD_TOLERANCE

            try:
                state_ok = bool(self._settings.model.same_fit(cache, replay))
            except (KeyError, ValueError):
                state_ok = False
            note = f"estimates within {SD_TOLERANCE:g} posterior sd (a cold refit against the warm-started cache)"
        else:
            state_ok = bool(max_diff <= VERIFY_TOLERANCE)
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
