"""Pairwise outcomes of HIT submissions and their exact sequential schedule (inputs of eq 14-22).

Bounded ranking aggregation (:mod:`core.models.easl`) and TrueSkill (:mod:`core.models.gaussian`) update on the
pairs of items scored together in one HIT submission. Their updates are order dependent, so the order is fixed
and documented here (:class:`PairSchedule`), and the pairs are grouped into steps of item-disjoint pairs so that
a vectorised update per step equals the sequential loop bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray


@dataclass
class PairSchedule:
    """The pairwise outcomes of a batch of HIT submissions, in the order they are applied.

    Order (documented, fixed): submissions (``group`` ids) in order of first appearance in the batch; the
    rows of a submission in batch order; its pairs by position ``(0, 1), (0, 2), ..., (0, m-1), (1, 2), ...``.
    Outcome of a pair ``(a, b)``: ``+1`` if ``s_a > s_b``, ``-1`` if ``s_a < s_b``, ``0`` (tie) if equal. Pairs
    of an item with itself (an item twice in one submission) are dropped.

    For speed the pairs are grouped into *steps* ("waves"): a pair's wave is 0 if neither item occurred in an
    earlier pair, else 1 + the largest wave of the latest earlier pair touching either item. Pairs of one
    wave touch disjoint items, and every item sees its pairs in sequential order, so applying the waves in
    order performs exactly the same updates, in the same order and with the same operands, as the
    sequential loop: the result equals sequential replay bit for bit.

    Attributes
    ----------
    first, second : ndarray of int64
        Items of each pair, in application order.
    outcome : ndarray of int8
        ``+1`` first wins, ``-1`` second wins, ``0`` tie.
    step_bounds : ndarray of int64
        Pairs ``step_bounds[s]:step_bounds[s+1]`` form step ``s``; all their items are distinct.
    """

    first: NDArray[Any]
    second: NDArray[Any]
    outcome: NDArray[Any]
    step_bounds: NDArray[Any]

    @property
    def n_pairs(self) -> int:
        """Number of pairs."""
        return int(self.first.size)

    def winner_first(self) -> tuple[NDArray[Any], NDArray[Any]]:
        """``(i, j)`` with the winner first (ties keep the submission order)."""
        swap = self.outcome < 0
        return np.where(swap, self.second, self.first), np.where(swap, self.first, self.second)


def _pair_levels(first: NDArray[Any], second: NDArray[Any]) -> NDArray[Any]:
    """Wave of each pair (:class:`PairSchedule`; ``first != second``), computed as a topological frontier,
    vectorised per wave: pairs whose predecessors are all placed form the next wave."""
    n_pairs = first.size
    touched = np.stack([first, second], axis=1).ravel()  # row r = 2 p + slot
    order = np.argsort(touched, kind="stable")  # by item, then pair
    same = touched[order[1:]] == touched[order[:-1]]
    succ = np.full(2 * n_pairs, -1, dtype=np.int64)  # row -> the next pair touching that row's item
    succ[order[:-1][same]] = order[1:][same] // 2
    indeg = np.bincount(order[1:][same] // 2, minlength=n_pairs)
    level = np.zeros(n_pairs, dtype=np.int64)
    stamp = np.zeros(n_pairs, dtype=np.int64)
    ready = np.flatnonzero(indeg == 0)
    current = 0
    while ready.size:
        level[ready] = current
        nxt = np.concatenate((succ[2 * ready], succ[2 * ready + 1]))
        nxt = nxt[nxt >= 0]
        if nxt.size == 0:
            break
        np.subtract.at(indeg, nxt, 1)
        ready = nxt[indeg[nxt] == 0]
        # a pair reached through both of its items appears twice: keep one copy (no sort needed)
        pos = np.arange(ready.size)
        stamp[ready] = pos
        ready = ready[stamp[ready] == pos]
        current += 1
    return level


def pair_schedule(item: Any, score01: Any, group: Any) -> PairSchedule:
    """Pairwise outcomes of HIT submissions (the inputs of eq 14-22) in the exact sequential order, batched
    into steps of item-disjoint pairs (:class:`PairSchedule`); a submission of ``m`` distinct items yields
    ``m (m - 1) / 2`` pairs.

    Parameters
    ----------
    item : array_like of int, shape (n,)
        Item index of each row.
    score01 : array_like of float, shape (n,)
        Score of each row on ``[0, 1]``.
    group : array_like of int, shape (n,)
        HIT submission of each row; submissions are taken in order of first appearance.

    Returns
    -------
    PairSchedule
        Empty (no pairs, one step bound) when there are fewer than two rows.

    References
    ----------
    Sakaguchi & Van Durme (2018), section 3.2 (a HIT of n items yields n(n-1)/2 pairwise outcomes).

    Examples
    --------
    >>> s = pair_schedule([0, 1, 2], [0.9, 0.1, 0.9], [7, 7, 7])
    >>> s.first.tolist(), s.second.tolist(), s.outcome.tolist(), s.step_bounds.tolist()
    ([0, 0, 1], [1, 2, 2], [1, 0, -1], [0, 1, 2, 3])
    """
    item = np.asarray(item, dtype=np.int64)
    score = np.asarray(score01, dtype=np.float64)
    group = np.asarray(group, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    none = PairSchedule(empty, empty.copy(), np.zeros(0, dtype=np.int8), np.zeros(1, dtype=np.int64))
    if item.size < 2:
        return none
    uniq, first_idx, inverse = np.unique(group, return_index=True, return_inverse=True)
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[np.argsort(first_idx, kind="stable")] = np.arange(uniq.size)
    gid = rank[inverse]
    order = np.argsort(gid, kind="stable")
    gid, item, score = gid[order], item[order], score[order]
    n_groups = int(uniq.size)
    gstart = np.searchsorted(gid, np.arange(n_groups))
    gsize = np.bincount(gid, minlength=n_groups)

    # pairs of every submission in sequential order, built per distinct submission size (few)
    max_size = np.int64(gsize.max())
    parts_g, parts_a, parts_b = [], [], []
    for m in np.unique(gsize):
        if m < 2:
            continue
        ta, tb = np.triu_indices(int(m), k=1)  # (0,1), (0,2), ..., (1,2), ...: lexicographic
        gs = np.flatnonzero(gsize == m)
        parts_g.append(np.repeat(gs, ta.size))
        parts_a.append(np.tile(ta, gs.size))
        parts_b.append(np.tile(tb, gs.size))
    if not parts_g:
        return none
    g = np.concatenate(parts_g)
    pa = np.concatenate(parts_a).astype(np.int64)
    pb = np.concatenate(parts_b).astype(np.int64)
    o = np.lexsort(((pa * max_size + pb), g))
    ra = gstart[g[o]] + pa[o]
    rb = gstart[g[o]] + pb[o]
    first, second = item[ra], item[rb]
    outcome = np.sign(score[ra] - score[rb]).astype(np.int8)
    keep = first != second
    first, second, outcome = first[keep], second[keep], outcome[keep]
    n_pairs = first.size
    if n_pairs == 0:
        return none
    level = _pair_levels(first, second)
    o = np.argsort(level, kind="stable")
    first, second, outcome, level = first[o], second[o], outcome[o], level[o]
    change = np.flatnonzero(np.diff(level)) + 1
    bounds = np.concatenate(([0], change, [n_pairs])).astype(np.int64)
    return PairSchedule(first, second, outcome, bounds)
