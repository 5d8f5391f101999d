"""The cached model state (``state`` table) and the figures derived from it (``meta`` key ``state_figures``).

The state is a set of float64 arrays (one value per item for every model), stored as raw little-endian bytes and
reflecting the observation log up to ``meta.state_seq``. The figures ``easl status`` reports (:func:`state_figures`)
are kept tagged with the log position they describe, so that a status read needs neither the arrays nor the model;
figures of another position (a file of an older version) are recomputed from the arrays.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import numpy as np
from numpy.typing import NDArray

STATE_PATCH_FRACTION = 1 / 16  # patch the cached arrays in place when at most this share of each one changed
FIGURES_KEY = "state_figures"


def save_state(conn: sqlite3.Connection, state: dict[str, NDArray[Any]], seq: int, variance: NDArray[Any]) -> None:
    """Store the model arrays, the log position they reflect and their figures (``variance``: the posterior
    variance per item, ``Model.selection_keys(state)[1]``).

    When the stored arrays have the same names and shapes and at most :data:`STATE_PATCH_FRACTION` of each
    changed, only the values that differ (bit for bit) are written, in place with SQLite's incremental blob I/O (a
    small ingest writes a few pages, not the whole state); otherwise the rows are rewritten whole. Either way the
    stored bytes equal ``state``.
    """
    arrays = {name: np.ascontiguousarray(arr, dtype="<f8") for name, arr in state.items()}
    stored = {
        name: (rowid, dtype, shape)
        for rowid, name, dtype, shape in conn.execute("SELECT rowid, name, dtype, shape FROM state")
    }
    changes: dict[str, NDArray[Any]] | None = None
    if set(stored) == set(arrays) and all(
        stored[n][1] == "<f8" and json.loads(stored[n][2]) == list(a.shape) for n, a in arrays.items()
    ):
        changes = {}
        for n, a in arrays.items():  # each stored array read only while patching still pays (a refit changes all)
            data = conn.execute("SELECT data FROM state WHERE rowid = ?", (stored[n][0],)).fetchone()[0]
            changes[n] = np.flatnonzero(np.frombuffer(data, dtype="<u8") != a.reshape(-1).view(np.uint64))
            if changes[n].size > STATE_PATCH_FRACTION * a.size:
                changes = None
                break
    if changes is None:
        conn.execute("DELETE FROM state")
        conn.executemany(
            "INSERT INTO state(name, dtype, shape, data) VALUES (?, ?, ?, ?)",
            [(name, "<f8", json.dumps(list(a.shape)), a.tobytes()) for name, a in arrays.items()],
        )
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
    figures = state_figures(variance, state["count"])
    figures["seq"] = int(seq)
    conn.executemany(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [("state_seq", str(int(seq))), (FIGURES_KEY, json.dumps(figures))],
    )


def load_state(conn: sqlite3.Connection, *, writable: bool = True) -> dict[str, NDArray[Any]]:
    """The cached model arrays (float64), by name; with ``writable=False`` read-only views of the stored bytes
    (no copy: for readers such as ``easl status`` and ``easl export``)."""
    state = {}
    for name, dtype, shape, data in conn.execute("SELECT name, dtype, shape, data FROM state ORDER BY name"):
        arr = np.frombuffer(data, dtype=np.dtype(dtype)).reshape(json.loads(shape))
        state[name] = arr.astype(np.float64, copy=writable)
    return state


def state_figures(variance: NDArray[Any], count: NDArray[Any]) -> dict[str, Any]:
    """``mean_variance``, ``max_variance`` (None with a reason unless every variance is finite),
    ``n_annotations`` (min / mean / max of the live count per item) and ``n_live`` (their sum: the live scores,
    since a state's ``count`` is each item's number of live observations, ``core.models.base``) of a state."""
    variance = np.asarray(variance, dtype=np.float64)
    finite = variance[np.isfinite(variance)]
    out: dict[str, Any] = {}
    if finite.size and finite.size == variance.size:
        out.update(mean_variance=float(finite.mean()), max_variance=float(finite.max()), variance_reason=None)
    else:
        out.update(
            mean_variance=None,
            max_variance=None,
            variance_reason=(
                "some variances are not finite"
                if finite.size
                else "no item has a finite variance"
                if variance.size
                else "the project has no items"
            ),
        )
    count = np.asarray(count, dtype=np.float64)
    out["n_live"] = int(np.rint(count.sum()))  # every live score counts 1 for its item (core.models.base)
    out["n_annotations"] = (
        {"min": int(count.min()), "mean": float(count.mean()), "max": int(count.max())}
        if count.size
        else {"min": None, "mean": None, "max": None, "reason": "the project has no items"}
    )
    return out


def stored_figures(conn: sqlite3.Connection) -> dict[str, Any] | None:
    """The figures stored with the state, or None when they are missing or describe another log position."""
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('state_seq', ?)", (FIGURES_KEY,)).fetchall())
    if FIGURES_KEY not in rows or "state_seq" not in rows:
        return None
    figures = json.loads(rows[FIGURES_KEY])
    return figures if figures.get("seq") == int(rows["state_seq"]) else None
