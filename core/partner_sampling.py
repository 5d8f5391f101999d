"""Partner sampling of Algorithm 1 (Sakaguchi & Van Durme 2018; docs/design.md section 3): the partners of each
anchor drawn without replacement with probability proportional to the match quality (eq 11 / 23).

:func:`partners` draws them by rejection from a binned envelope, vectorised over anchors in rounds (the method is
described in ``core.selection.select_hits``); :func:`partners_direct` is the literal ``O(k N)`` successive sampling
over each anchor's whole pool, used for few anchors and to finish the anchors still short after the rounds;
:func:`successive` is one successive draw. All three give the same law; the generator passed in is the only source
of randomness.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

BLOCK = 4096  # anchors per block of the envelope and of each round's proposals (temporaries of a few hundred KiB)


def log_quality(m_i: Any, v_i: Any, m_j: Any, v_j: Any, g2: float) -> NDArray[Any]:
    """``log q`` of eq 11 / 23 (``g2 = 2 gamma^2``); log space keeps far-apart pairs comparable."""
    c2 = g2 + v_i + v_j
    out: NDArray[Any] = 0.5 * np.log(g2 / c2) - (m_i - m_j) ** 2 / (2.0 * c2)
    return out


def successive(ids: NDArray[Any], logq: NDArray[Any], size: int, rng: np.random.Generator) -> NDArray[Any]:
    """Successive sampling of ``size`` of ``ids`` with probability proportional to ``exp(logq)``.

    Weights are taken relative to the best candidate (``exp(logq - max)``), so they never all underflow. If
    fewer than ``size`` candidates have a representable (non-zero) weight, the rest are the remaining
    candidates of highest ``logq`` (a defined result instead of numpy's error).
    """
    if size <= 0 or ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    p = np.exp(logq - logq.max())
    positive = int(np.count_nonzero(p > 0))
    take = min(size, positive)
    first = rng.choice(ids.size, size=take, replace=False, p=p / p.sum())
    if take == size:
        return ids[first]
    rest = np.setdiff1d(np.arange(ids.size), first)
    tie = rng.permutation(rest.size)
    rest = rest[tie][np.argsort(-logq[rest][tie], kind="stable")]
    out: NDArray[Any] = ids[np.concatenate([first, rest[: size - take]])]
    return out


def partners(
    anchors: NDArray[Any],
    pool_ids: NDArray[Any],
    location: NDArray[Any],
    variance: NDArray[Any],
    m: int,
    gamma: float,
    rng: np.random.Generator,
    *,
    self_in_pool: bool,
    n_bins: int,
    max_rounds: int,
) -> NDArray[Any]:
    """Partners of every anchor by binned-envelope rejection sampling (see :func:`core.selection.select_hits`)."""
    g2 = 2.0 * gamma * gamma
    k = anchors.size
    if max_rounds <= 0:  # literal computation for every anchor
        return partners_direct(anchors, pool_ids, location, variance, m, g2, rng, self_in_pool=self_in_pool)
    # pool sorted by location, equal-count bins
    o = np.argsort(location[pool_ids], kind="stable")
    ids_s = pool_ids[o]
    m_s = location[ids_s]
    v_s = variance[ids_s]
    n_pool = ids_s.size
    n_b = max(1, min(int(n_bins), n_pool))
    starts = (np.arange(n_b, dtype=np.int64) * n_pool) // n_b
    sizes = np.diff(np.append(starts, n_pool))
    lo = m_s[starts]
    hi = m_s[starts + sizes - 1]
    vmin = np.minimum.reduceat(v_s, starts)
    vmax = np.maximum.reduceat(v_s, starts)

    a_m = location[anchors]
    a_v = variance[anchors]
    # padded to a power of two for a branch-free vectorised binary search
    width = 1 << (n_b - 1).bit_length() if n_b > 1 else 1
    log_u, cdf = _envelope(a_m, a_v, g2, lo, hi, vmin, vmax, sizes, width)
    total = cdf[:, n_b - 1].copy()
    cdf_flat, log_u_flat = cdf.reshape(-1), log_u.reshape(-1)  # rows gathered by flat index, never copied whole

    chosen = np.full((k, m), -1, dtype=np.int64)
    count = np.zeros(k, dtype=np.int64)
    active = np.arange(k)
    r = max(2, 2 * m)  # proposals per anchor per round
    for _ in range(max_rounds):
        if active.size == 0:
            break
        na = active.size
        # the round's three uniform draws, in the order of the steps below (bin, item in the bin, acceptance),
        # then the steps block by block of anchors (each anchor's proposals depend on its row alone)
        u_bin, u_pos, u_acc = (rng.random((na, r)) for _ in range(3))
        for s in range(0, na, BLOCK):
            rows = active[s : s + BLOCK]
            _propose(
                rows, u_bin[s : s + BLOCK], u_pos[s : s + BLOCK], u_acc[s : s + BLOCK],
                anchors, a_m, a_v, g2, cdf_flat, log_u_flat, total, width, n_b, starts, sizes, ids_s, m_s, v_s,
                chosen, count, m, self_in_pool,
            )  # fmt: skip
        active = active[count[active] < m]
    # stragglers (rare): literal continuation, conditional on what each has drawn so far
    if active.size:
        chosen[active] = partners_direct(
            anchors[active],
            pool_ids,
            location,
            variance,
            m,
            g2,
            rng,
            self_in_pool=self_in_pool,
            chosen=chosen[active],
            count=count[active],
        )
    return chosen


def _envelope(
    a_m: NDArray[Any],
    a_v: NDArray[Any],
    g2: float,
    lo: NDArray[Any],
    hi: NDArray[Any],
    vmin: NDArray[Any],
    vmax: NDArray[Any],
    sizes: NDArray[Any],
    width: int,
) -> tuple[NDArray[Any], NDArray[Any]]:
    """``(log_u, cdf)``: ``log U_ib`` of every anchor and bin (:func:`core.selection.select_hits`), shape
    ``(k, B)``, and per anchor the cumulative sums of ``|b| U_ib / max_b U_ib`` over the bins, shape ``(k, width)``
    (the last sum repeated past ``B``). Computed block by block of anchors with the same operations in the same
    order as the formula, so that the temporaries stay small (a few hundred KiB, not ``k x B``)."""
    k, n_b = a_m.size, lo.size
    log_u = np.empty((k, n_b))
    cdf = np.empty((k, width))
    a2_all = g2 + a_v  # 2 gamma^2 + V_i
    for s in range(0, k, BLOCK):
        a_mb, a2 = a_m[s : s + BLOCK, None], a2_all[s : s + BLOCK, None]
        dist = lo[None, :] - a_mb  # distance from M_i to [lo_b, hi_b], squared, over 2 (2 gamma^2 + V_i + vmax_b)
        np.maximum(dist, a_mb - hi[None, :], out=dist)
        np.maximum(dist, 0.0, out=dist)
        dist *= dist
        scale = a2 + vmax[None, :]  # the one other block buffer: scale, then weights
        scale *= 2.0
        dist /= scale
        block = log_u[s : s + BLOCK]
        np.add(a2, vmin[None, :], out=block)
        np.divide(g2, block, out=block)
        np.log(block, out=block)
        block *= 0.5
        block -= dist
        np.subtract(block, block.max(axis=1, keepdims=True), out=scale)
        np.exp(scale, out=scale)
        scale *= sizes[None, :]
        np.cumsum(scale, axis=1, out=cdf[s : s + BLOCK, :n_b])
    if width > n_b:
        cdf[:, n_b:] = cdf[:, n_b - 1 : n_b]
    return log_u, cdf


def _propose(
    rows: NDArray[Any],
    u_bin: NDArray[Any],
    u_pos: NDArray[Any],
    u_acc: NDArray[Any],
    anchors: NDArray[Any],
    a_m: NDArray[Any],
    a_v: NDArray[Any],
    g2: float,
    cdf_flat: NDArray[Any],
    log_u_flat: NDArray[Any],
    total: NDArray[Any],
    width: int,
    n_b: int,
    starts: NDArray[Any],
    sizes: NDArray[Any],
    ids_s: NDArray[Any],
    m_s: NDArray[Any],
    v_s: NDArray[Any],
    chosen: NDArray[Any],
    count: NDArray[Any],
    m: int,
    self_in_pool: bool,
) -> None:
    """One round of proposals for the anchors ``rows`` (``r`` each, from the uniforms ``u_bin, u_pos, u_acc`` of
    shape ``(len(rows), r)``): pick a bin by the anchor's ``cdf``, an item uniformly in it, accept with probability
    ``q / U`` unless already drawn (or the anchor itself, or accepted earlier in the round); the accepted ones,
    up to the ``m`` needed, are appended to ``chosen`` and counted in ``count`` (both updated in place)."""
    na, r = u_bin.shape
    # bin: the number of cdf entries <= x (searchsorted side="right"), by binary search per row
    x = u_bin * total[rows][:, None]
    row_start = (rows * width)[:, None]
    b: NDArray[Any] = np.zeros((na, r), dtype=np.int64)
    step = width // 2
    while step >= 1:
        b += (cdf_flat[row_start + (b + (step - 1))] <= x) * step
        step //= 2
    b = np.minimum(b, n_b - 1)  # x < total up to rounding
    pos: NDArray[Any] = starts[b] + (u_pos * sizes[b]).astype(np.int64)
    pos = np.minimum(pos, starts[b] + sizes[b] - 1)
    cand = ids_s[pos]
    logq = log_quality(a_m[rows][:, None], a_v[rows][:, None], m_s[pos], v_s[pos], g2)
    ratio = np.exp(logq - log_u_flat[(rows * n_b)[:, None] + b])
    acc = u_acc < ratio
    if self_in_pool:
        acc &= cand != anchors[rows][:, None]
    ch = chosen[rows]
    for j in range(int(count[rows].max())):  # not one already drawn (columns past the count hold -1)
        acc &= cand != ch[:, j : j + 1]
    # not one accepted earlier in this round: column-wise over the r proposals, oldest first
    cand_t, acc_t = cand.T, acc.T
    valid_t = acc_t.copy()
    for j in range(1, r):
        dup = np.zeros(na, dtype=bool)
        for earlier in range(j):
            dup |= (cand_t[earlier] == cand_t[j]) & acc_t[earlier]
        valid_t[j] &= ~dup
    valid = valid_t.T
    rank = np.cumsum(valid, axis=1)
    need = (m - count[rows])[:, None]
    take = valid & (rank <= need)
    ri, ci = np.nonzero(take)
    chosen[rows[ri], count[rows[ri]] + rank[ri, ci] - 1] = cand[ri, ci]
    count[rows] += np.minimum(rank[:, -1], need[:, 0])


def partners_direct(
    anchors: NDArray[Any],
    pool_ids: NDArray[Any],
    location: NDArray[Any],
    variance: NDArray[Any],
    m: int,
    g2: float,
    rng: np.random.Generator,
    *,
    self_in_pool: bool,
    chosen: NDArray[Any] | None = None,
    count: NDArray[Any] | None = None,
) -> NDArray[Any]:
    """Literal successive sampling of each anchor's partners over its whole pool, ``O(k N)``; continues
    from ``chosen[:, :count]`` when given (conditional on the partners already drawn: the same law)."""
    k = anchors.size
    if chosen is None or count is None:
        chosen = np.full((k, m), -1, dtype=np.int64)
        count = np.zeros(k, dtype=np.int64)
    chosen = chosen.copy()
    pool_m, pool_v = location[pool_ids], variance[pool_ids]
    for row in range(k):
        a, c = anchors[row], int(count[row])
        mask = ~np.isin(pool_ids, chosen[row, :c])
        if self_in_pool:
            mask &= pool_ids != a
        logq = log_quality(location[a], variance[a], pool_m[mask], pool_v[mask], g2)
        chosen[row, c:] = successive(pool_ids[mask], logq, m - c, rng)
    return chosen
