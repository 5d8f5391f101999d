"""Deriving the model state from the observation log: replay, the check of the cache (``easl verify``), the rebuild,
and the state at the end of each iteration (the Monitor's convergence history).

Replay order: the live observations (the last record of each source key, when a score) in log order; the models
process HIT submissions in order of first appearance (``core.models.pair_schedule``).
"""
from __future__ import annotations

import sqlite3
from typing import Any, Iterator

import numpy as np

from core.store.db import max_seq
from core.store.hits import STATUS_SQL, refresh_hits
from core.store.observations import Observations
from core.store.state import load_state, save_state

VERIFY_TOLERANCE = 1e-9


def _group_codes(keys) -> np.ndarray:
    """Integer codes of the submission (group) keys, in order of first appearance."""
    import pandas as pd

    return pd.factorize(pd.Series(keys, dtype=object))[0].astype(np.int64)


class Replay(Observations):
    """Replay, verification and rebuild of the cached state (mixed into :class:`core.store.Project`)."""

    def _save_state(self, conn: sqlite3.Connection, state: dict[str, np.ndarray], seq: int) -> None:
        save_state(conn, state, seq, self.model.selection_keys(state)[1])

    def _replay(self, conn: sqlite3.Connection) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Rebuild the state from the whole log: the last record of each source key, if a score, is live; live
        observations are applied in log order. Returns ``(state, live seqs)``."""
        import pandas as pd

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
        groups = _group_codes([group[i] for i in idx.tolist()])
        self.model.apply(state, item_a, s01_a, groups)
        return state, np.asarray(seq, dtype=np.int64)[idx]

    def iteration_states(self, upto: int) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """The state at the end of each iteration ``t < upto``, in order: the replay of the live observations of
        HITs of iterations ``<= t``, in log order. Observations outside any HIT belong to no completed iteration
        (they count in the current one only). Yields ``(t, state)``; the same state object is updated in place
        from one iteration to the next (copy it to keep it)."""
        with self._reading() as conn:
            rows = conn.execute("SELECT l.item_idx, l.score01, l.group_key, h.iteration FROM live l "
                                "LEFT JOIN hits h ON h.hit_id = l.hit_id ORDER BY l.seq").fetchall()
        state = self.model.init_state(self.n_items)
        if rows:
            item, s01, group, iteration = zip(*rows)
            item_a = np.asarray(item, dtype=np.int64)
            s01_a = np.asarray(s01, dtype=np.float64)
            groups = _group_codes(group)
            it_a = np.asarray([upto if t is None else t for t in iteration], dtype=np.int64)
        for t in range(upto):
            if rows:
                sel = it_a == t
                if sel.any():
                    self.model.apply(state, item_a[sel], s01_a[sel], groups[sel])
            yield t, state

    def rebuild(self) -> dict[str, Any]:
        """Replace the cached state by a replay of the log (repairs a cache that :meth:`verify` found wrong);
        one transaction. Returns :meth:`verify`'s result after the rebuild."""
        with self._writing() as conn:
            state, _ = self._replay(conn)
            self._save_state(conn, state, max_seq(conn))
            conn.execute("DELETE FROM live")
            conn.execute(
                "INSERT INTO live(source_key, seq, item_idx, score01, score_raw, hit_id, annotation_id, group_key) "
                "SELECT o.source_key, o.seq, o.item_idx, o.score01, o.score_raw, o.hit_id, o.annotation_id, "
                "o.group_key FROM observations o JOIN (SELECT source_key, MAX(seq) AS seq FROM observations "
                "GROUP BY source_key) m ON m.seq = o.seq WHERE o.kind = 'score'")
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
            ``seq_ok`` (the cache reflects the end of the log), ``n_observations``, ``n_log_records``.
        """
        with self._reading() as conn:
            replay, live_seqs = self._replay(conn)
            cache = load_state(conn)
            table_seqs = np.sort(np.asarray([r[0] for r in conn.execute("SELECT seq FROM live")], dtype=np.int64))
            n_log = max_seq(conn)
            state_seq = int(conn.execute("SELECT value FROM meta WHERE key = 'state_seq'").fetchone()[0])
            bad_hits = conn.execute(f"SELECT COUNT(*) FROM hits WHERE status != 'retracted' AND status != "
                                    f"({STATUS_SQL})").fetchone()[0]
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
        seq_ok = state_seq == n_log
        hits_ok = bad_hits == 0
        return {"ok": bool(max_diff <= VERIFY_TOLERANCE and live_ok and seq_ok and hits_ok),
                "max_abs_diff": max_diff, "tolerance": VERIFY_TOLERANCE, "arrays": arrays, "live_ok": live_ok,
                "seq_ok": seq_ok, "hits_ok": hits_ok, "n_observations": int(live_seqs.size),
                "n_log_records": n_log, "method": self.hyper.method}
