"""The rows of iterations and HITs: recording a new iteration's HITs and recomputing HIT status.

HITs get consecutive integer keys ``hit_no`` in creation order and text ids ``it{t}-{j}``; their items go to
``hit_items(hit_no, position, item_idx)`` in key order (``core.store.schema``). A HIT is ``complete`` when every one
of its items has a live score with its ``hit_id`` (:data:`STATUS_SQL`).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from numpy.typing import NDArray

from easl_toolkit.core.store.db import now

STATUS_SQL = (
    "CASE WHEN NOT EXISTS (SELECT 1 FROM hit_items hi WHERE hi.hit_no = hits.hit_no AND NOT EXISTS "
    "(SELECT 1 FROM live l WHERE l.hit_id = hits.hit_id AND l.item_idx = hi.item_idx)) "
    "THEN 'complete' ELSE 'open' END"
)

#: HITs written per statement by :func:`insert_iteration` (a million item positions at HIT size 5).
SLICE_HITS = 200_000


def hit_ids(iteration: int, n_hits: int, lo: int = 0, hi: int | None = None) -> list[str]:
    """``it{iteration}-{j}`` for ``lo <= j < hi`` (default: every ``j < n_hits``), ``j`` zero-padded to the digits
    of ``n_hits - 1`` (one width for the whole iteration)."""
    template = f"it{iteration}-%0{len(str(max(n_hits - 1, 0)))}d"
    return list(map(template.__mod__, range(lo, n_hits if hi is None else hi)))


def insert_iteration(conn: sqlite3.Connection, iteration: int, hits: NDArray[Any], log_seq: int) -> None:
    """Record iteration ``iteration`` with the given HITs (rows of item positions), all ``open``: the HITs get the
    next integer keys ``hit_no`` and their items are appended in key order (at the end of the B-trees). A row may end
    in -1 (a HIT shorter than the others: its positions stop there)."""
    n_hits = hits.shape[0]
    stamp = now()
    first = int(conn.execute("SELECT COALESCE(MAX(hit_no), 0) + 1 FROM hits").fetchone()[0])
    conn.execute(
        "INSERT INTO iterations(iteration, started_at, n_hits, log_seq) VALUES (?, ?, ?, ?)",
        (iteration, stamp, n_hits, log_seq),
    )
    # one statement per table and slice of SLICE_HITS HITs over a JSON array (SQLite's json_each)
    n = hits.shape[1] if hits.ndim == 2 else 0
    ids = hit_ids(iteration, n_hits)
    for lo in range(0, n_hits, SLICE_HITS):
        hi = min(lo + SLICE_HITS, n_hits)
        conn.execute(
            "INSERT INTO hits(hit_no, hit_id, iteration, status, created_at) "
            "SELECT ?1 + key, value, ?2, 'open', ?3 FROM json_each(?4)",
            (first + lo, iteration, stamp, json.dumps(ids[lo:hi])),
        )
        if n:
            conn.execute(
                "INSERT INTO hit_items(hit_no, position, item_idx) "
                "SELECT ?1 + key / ?2, key % ?2, value FROM json_each(?3) WHERE value >= 0",
                (first + lo, n, json.dumps(hits[lo:hi].ravel().tolist())),
            )


def mark_complete(conn: sqlite3.Connection, ids: list[str]) -> None:
    """Mark the given open HITs ``complete`` (known to be: every item has a live score with the HIT's id)."""
    if ids:
        conn.execute(
            "UPDATE hits SET status = 'complete' WHERE status = 'open' AND hit_id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )


def refresh_hits(conn: sqlite3.Connection, ids: list[str] | None) -> None:
    """Recompute ``open``/``complete`` for the given HITs (all when None); retracted HITs stay retracted."""
    if ids is None:
        conn.execute(f"UPDATE hits SET status = {STATUS_SQL} WHERE status != 'retracted'")
        return
    if not ids:
        return
    conn.execute(  # the ids as one JSON array, not a temporary table filled row by row
        f"UPDATE hits SET status = {STATUS_SQL} WHERE status != 'retracted' AND hit_id IN "
        "(SELECT value FROM json_each(?))",
        (json.dumps(ids),),
    )
