"""Stable sort orders of large float columns kept up to date when a few values change, and average ranks from
such an order (the Monitor re-sorts 100,000 items on every refresh while only the items of a few HITs changed).

The order is the one of ``numpy.argsort(values, kind="stable")``: ascending values, NaN last, ties (equal
values; all NaN count as equal) in index order, i.e. the lexicographic order of ``(value, index)``.
"""

from __future__ import annotations

import numpy as np

#: Above this share of changed values an update re-sorts everything (one argsort is then cheaper).
UPDATE_FRACTION = 1 / 64


def stable_order(values: np.ndarray) -> np.ndarray:
    """``numpy.argsort(values, kind="stable")`` as int64: ascending, NaN last, ties in index order."""
    return np.argsort(np.asarray(values, dtype=np.float64), kind="stable").astype(np.int64, copy=False)


def changed_mask(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Where ``new`` differs from ``old`` (two NaN count as equal)."""
    return ~((old == new) | (np.isnan(old) & np.isnan(new)))


def update_stable_order(order: np.ndarray, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The stable order of ``new`` from ``order``, the stable order of ``old`` (same length).

    The unchanged values keep their relative order, so only the changed ones are placed: item ``c`` goes after
    every kept item ``k`` with ``(new[k], k) < (new[c], c)``. With ``kept`` the order less the changed items,
    its values ``v`` and its run numbers ``r`` (runs of equal values), the position of ``c`` is
    ``searchsorted(v, new[c])`` when no kept value equals ``new[c]``, else ``searchsorted(r * N + kept,
    r_c * N + c)`` (within a run, indices ascend). O(N + m log N) for m changed values; more than
    :data:`UPDATE_FRACTION` of N changed (or a length change) re-sorts whole. The result equals
    :func:`stable_order` of ``new`` exactly.
    """
    old = np.asarray(old, dtype=np.float64)
    new = np.asarray(new, dtype=np.float64)
    n = new.shape[0]
    if old.shape != new.shape or order.shape != new.shape:
        return stable_order(new)
    changed = changed_mask(old, new)
    idx = np.flatnonzero(changed)
    if idx.size == 0:
        return order
    if idx.size > UPDATE_FRACTION * n:
        return stable_order(new)
    kept = order[~changed[order]]
    values = new[kept]
    if kept.size:
        breaks = np.empty(kept.size, dtype=bool)
        breaks[0] = False
        np.not_equal(values[1:], values[:-1], out=breaks[1:])
        breaks[1:] &= ~(np.isnan(values[1:]) & np.isnan(values[:-1]))
        run = np.cumsum(breaks)
    else:
        run = np.empty(0, dtype=np.int64)
    moved = idx[stable_order(new[idx])]  # the changed items in their own (value, index) order
    v = new[moved]
    left = np.searchsorted(values, v, side="left")  # numpy's searchsorted puts NaN last, as argsort does
    right = np.searchsorted(values, v, side="right")
    pos = left.copy()
    tie = left < right
    if tie.any():
        composite = run * n + kept
        pos[tie] = np.searchsorted(composite, run[left[tie]] * n + moved[tie], side="left")
    return np.insert(kept, pos, moved)


def average_ranks(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Average ranks (1-based; ties share the mean of their ranks) of the finite entries of ``values``, NaN for
    the others, given ``order`` = :func:`stable_order` of ``values``; equals ``scipy.stats.rankdata`` of the
    finite entries (method "average"), in O(N)."""
    values = np.asarray(values, dtype=np.float64)
    out = np.full(values.shape, np.nan)
    finite = order[np.isfinite(values[order])]
    m = finite.size
    if m == 0:
        return out
    s = values[finite]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    ends = np.r_[starts[1:], m]
    out[finite] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return out
