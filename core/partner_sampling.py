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
    a2 = g2 + a_v  # 2 gamma^2 + V_i
    # log U_ib, computed in place (the same operations in the same order as the formula above)
    dist = lo[None, :] - a_m[:, None]
    np.maximum(dist, a_m[:, None] - hi[None, :], out=dist)
    np.maximum(dist, 0.0, out=dist)
    dist *= dist
    buffer = a2[:, None] + vmax[None, :]  # the one other (k, B) buffer: scale, then weights and their cdf
    buffer *= 2.0
    dist /= buffer
    log_u = a2[:, None] + vmin[None, :]
    np.divide(g2, log_u, out=log_u)
    np.log(log_u, out=log_u)
    log_u *= 0.5
    log_u -= dist
    del dist
    np.subtract(log_u, log_u.max(axis=1, keepdims=True), out=buffer)
    np.exp(buffer, out=buffer)
    buffer *= sizes[None, :]
    cdf = np.cumsum(buffer, axis=1, out=buffer)
    # padded to a power of two for a branch-free vectorised binary search
    width = 1 << (n_b - 1).bit_length() if n_b > 1 else 1
    if width > n_b:
        cdf = np.concatenate([cdf, np.repeat(cdf[:, -1:], width - n_b, axis=1)], axis=1)
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
        # bin: the number of cdf entries <= x (searchsorted side="right"), by binary search per row
        x = rng.random((na, r)) * total[active][:, None]
        row_start = (active * width)[:, None]
        b: NDArray[Any] = np.zeros((na, r), dtype=np.int64)
        step = width // 2
        while step >= 1:
            b += (cdf_flat[row_start + (b + (step - 1))] <= x) * step
            step //= 2
        b = np.minimum(b, n_b - 1)  # x < total up to rounding
        pos: NDArray[Any] = starts[b] + (rng.random((na, r)) * sizes[b]).astype(np.int64)
        pos = np.minimum(pos, starts[b] + sizes[b] - 1)
        cand = ids_s[pos]
        logq = log_quality(a_m[active][:, None], a_v[active][:, None], m_s[pos], v_s[pos], g2)
        ratio = np.exp(logq - log_u_flat[(active * n_b)[:, None] + b])
        acc = rng.random((na, r)) < ratio
        if self_in_pool:
            acc &= cand != anchors[active][:, None]
        ch = chosen[active]
        for j in range(int(count[active].max())):  # not one already drawn (columns past the count hold -1)
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
        need = (m - count[active])[:, None]
        take = valid & (rank <= need)
        ri, ci = np.nonzero(take)
        chosen[active[ri], count[active[ri]] + rank[ri, ci] - 1] = cand[ri, ci]
        count[active] += np.minimum(rank[:, -1], need[:, 0])
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
