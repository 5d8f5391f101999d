"""Partner sampling of Algorithm 1 (Sakaguchi & Van Durme 2018; docs/design.md section 3): the partners of each
anchor drawn without replacement with probability proportional to the match quality (eq 11 / 23).

:func:`partners` draws them by rejection from a binned envelope, vectorised over anchors in rounds (the method is
described in ``core.selection.select_hits``); :func:`partners_direct` is the literal ``O(k N)`` successive sampling
over each anchor's whole pool, used for few anchors and to finish the anchors still short after the rounds;
:func:`successive` is one successive draw. All three give the same law; the generator passed in is the only source
of randomness.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

BLOCK = 4096  # anchors per block of the envelope and of each round's proposals (temporaries of a few hundred KiB)
DEFAULT_BINS = 32
DEFAULT_MAX_ROUNDS = 64


@dataclass(frozen=True, eq=False)
class Candidates:
    """Who draws partners from whom: the ``anchors`` (item positions), the ``pool_ids`` they draw from, the
    selection keys of every item (``location`` M and ``variance``, eq 11 / 23), and whether an anchor lies in its own
    pool (``self_in_pool``: pool "all"; it is then never its own partner)."""

    anchors: NDArray[Any]
    pool_ids: NDArray[Any]
    location: NDArray[Any]
    variance: NDArray[Any]
    self_in_pool: bool


@dataclass(frozen=True)
class Envelope:
    """How the binned-envelope sampler (:func:`partners`) works: ``n_bins`` bins of the pool and at most
    ``max_rounds`` rounds of proposals before the literal continuation (0: literal for every anchor). They change
    the speed, never the distribution."""

    n_bins: int = DEFAULT_BINS
    max_rounds: int = DEFAULT_MAX_ROUNDS


class _Anchors(NamedTuple):
    """The anchors of :func:`partners` as the acceptance step reads them: their ids, locations ``m``, variances
    ``v``, ``a2 = 2 gamma^2 + V_i``, ``g2 = 2 gamma^2``, and whether each is in its own pool."""

    ids: NDArray[Any]
    m: NDArray[Any]
    v: NDArray[Any]
    a2: NDArray[Any]
    g2: float
    self_in_pool: bool


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
    cand: Candidates, m: int, gamma: float, rng: np.random.Generator, envelope: Envelope = Envelope()
) -> NDArray[Any]:
    """Partners of every anchor by binned-envelope rejection sampling (see :func:`core.selection.select_hits`)."""
    g2 = 2.0 * gamma * gamma
    k = cand.anchors.size
    if envelope.max_rounds <= 0:  # literal computation for every anchor
        return partners_direct(cand, m, g2, rng)
    bins = _bins(cand.pool_ids, cand.location, cand.variance, envelope.n_bins)
    n_b = bins.lo.size
    a_m = cand.location[cand.anchors]
    a_v = cand.variance[cand.anchors]
    anchors = _Anchors(cand.anchors, a_m, a_v, g2 + a_v, g2, cand.self_in_pool)  # a2 = 2 gamma^2 + V_i
    # padded to a power of two for a branch-free vectorised binary search
    width = 1 << (n_b - 1).bit_length() if n_b > 1 else 1
    cdf = _envelope(a_m, anchors.a2, g2, bins, width)
    total = cdf[:, n_b - 1].copy()
    cdf_flat = cdf.reshape(-1)  # rows gathered by flat index, never copied whole

    chosen = np.full((k, m), -1, dtype=np.int64)
    count = np.zeros(k, dtype=np.int64)
    active = np.arange(k)
    r = max(2, 2 * m)  # proposals per anchor per round
    for _ in range(envelope.max_rounds):
        if active.size == 0:
            break
        na = active.size
        # the round's three uniform draws, in the order of the steps below (bin, item in the bin, acceptance),
        # then the steps block by block of anchors (each anchor's proposals depend on its row alone)
        u_bin, u_pos, u_acc = (rng.random((na, r)) for _ in range(3))
        for s in range(0, na, BLOCK):
            rows = active[s : s + BLOCK]
            block = slice(s, s + BLOCK)
            bin_of = _pick_bins(rows, u_bin[block] * total[rows][:, None], cdf_flat, width, n_b)
            accepted = _accept(rows, (bin_of, u_pos[block], u_acc[block]), anchors, bins)
            _record(rows, accepted, chosen, count, m)
        active = active[count[active] < m]
    # stragglers (rare): literal continuation, conditional on what each has drawn so far
    if active.size:
        chosen[active] = partners_direct(
            replace(cand, anchors=cand.anchors[active]), m, g2, rng, (chosen[active], count[active])
        )
    return chosen


class _Bins(NamedTuple):
    """The partner pool sorted by location (``ids``, with ``m`` and ``v`` their locations and variances) and cut
    into bins of equal count: bin ``b`` holds ``ids[starts[b] : starts[b] + sizes[b]]``, its locations lie in
    ``[lo[b], hi[b]]`` and its variances in ``[vmin[b], vmax[b]]``."""

    ids: NDArray[Any]
    m: NDArray[Any]
    v: NDArray[Any]
    starts: NDArray[Any]
    sizes: NDArray[Any]
    lo: NDArray[Any]
    hi: NDArray[Any]
    vmin: NDArray[Any]
    vmax: NDArray[Any]


def _bins(pool_ids: NDArray[Any], location: NDArray[Any], variance: NDArray[Any], n_bins: int) -> _Bins:
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
    return _Bins(ids_s, m_s, v_s, starts, sizes, lo, hi, vmin, vmax)


def _log_bound(a_m: NDArray[Any], a2: NDArray[Any], g2: float, ranges: tuple[NDArray[Any], ...]) -> NDArray[Any]:
    """``log U_ib`` (:func:`core.selection.select_hits`) of anchors at ``a_m`` with ``a2 = 2 gamma^2 + V_i`` and
    bins of ``ranges = (lo, hi, vmin, vmax)``, broadcasting: ``0.5 log(g2 / (a2 + vmin)) - d^2 / (2 (a2 + vmax))``
    with ``d`` the distance from ``a_m`` to ``[lo, hi]``. The one formula for the envelope (every bin) and the
    acceptance (the proposals' bins), so the two agree bit for bit."""
    lo, hi, vmin, vmax = ranges
    dist = np.maximum(np.maximum(lo - a_m, a_m - hi), 0.0)
    out: NDArray[Any] = 0.5 * np.log(g2 / (a2 + vmin)) - dist * dist / (2.0 * (a2 + vmax))
    return out


def _envelope(a_m: NDArray[Any], a2: NDArray[Any], g2: float, bins: _Bins, width: int) -> NDArray[Any]:
    """Per anchor the cumulative sums over the bins of ``|b| U_ib / max_b U_ib`` (:func:`_log_bound`), shape
    ``(k, width)`` (the last sum repeated past the ``B`` bins), computed block by block of anchors so that the
    temporaries stay small (a few hundred KiB, not ``k x B``)."""
    k, n_b = a_m.size, bins.lo.size
    cdf = np.empty((k, width))
    ranges = tuple(x[None, :] for x in (bins.lo, bins.hi, bins.vmin, bins.vmax))
    for s in range(0, k, BLOCK):
        weight = _log_bound(a_m[s : s + BLOCK, None], a2[s : s + BLOCK, None], g2, ranges)
        weight -= weight.max(axis=1, keepdims=True)
        np.exp(weight, out=weight)
        weight *= bins.sizes[None, :]
        np.cumsum(weight, axis=1, out=cdf[s : s + BLOCK, :n_b])
    if width > n_b:
        cdf[:, n_b:] = cdf[:, n_b - 1 : n_b]
    return cdf


def _pick_bins(rows: NDArray[Any], x: NDArray[Any], cdf_flat: NDArray[Any], width: int, n_b: int) -> NDArray[Any]:
    """The bin of each proposal: the number of entries of its anchor's ``cdf`` row that are <= ``x``
    (``searchsorted`` side "right"), by a branch-free binary search per row."""
    row_start = (rows * width)[:, None]
    b: NDArray[Any] = np.zeros(x.shape, dtype=np.int64)
    step = width // 2
    while step >= 1:
        b += (cdf_flat[row_start + (b + (step - 1))] <= x) * step
        step //= 2
    picked: NDArray[Any] = np.minimum(b, n_b - 1)  # x < total up to rounding
    return picked


def _accept(
    rows: NDArray[Any],
    proposals: tuple[NDArray[Any], NDArray[Any], NDArray[Any]],
    anchors: _Anchors,
    bins: _Bins,
) -> tuple[NDArray[Any], NDArray[Any]]:
    """``(cand, acc)``: the proposals of the anchors ``rows`` (``proposals``: their bins ``b`` and the uniforms
    ``u_pos``, ``u_acc``) in the bins ``b`` (an item uniformly in the bin by ``u_pos``) and whether each is
    accepted, with probability ``q / U`` by ``u_acc`` (and not the anchor itself when it is in its own pool)."""
    b, u_pos, u_acc = proposals
    g2, a_m, a2 = anchors.g2, anchors.m[rows][:, None], anchors.a2[rows][:, None]
    start, size = bins.starts[b], bins.sizes[b]
    pos: NDArray[Any] = np.minimum(start + (u_pos * size).astype(np.int64), start + size - 1)
    cand = bins.ids[pos]
    logq = log_quality(a_m, anchors.v[rows][:, None], bins.m[pos], bins.v[pos], g2)
    log_u = _log_bound(a_m, a2, g2, (bins.lo[b], bins.hi[b], bins.vmin[b], bins.vmax[b]))
    acc = u_acc < np.exp(logq - log_u)
    if anchors.self_in_pool:
        acc &= cand != anchors.ids[rows][:, None]
    return cand, acc


def _record(
    rows: NDArray[Any],
    accepted: tuple[NDArray[Any], NDArray[Any]],
    chosen: NDArray[Any],
    count: NDArray[Any],
    m: int,
) -> None:
    """Append to ``chosen`` (updating ``count``, both in place) the accepted proposals (``accepted``: the proposals
    ``cand`` and whether each was accepted, ``acc``) of the anchors ``rows``, oldest first, up to the ``m`` partners
    needed, leaving out items already drawn and those accepted earlier in the round."""
    cand, acc = accepted
    na, r = cand.shape
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
    cand: Candidates,
    m: int,
    g2: float,
    rng: np.random.Generator,
    drawn: tuple[NDArray[Any], NDArray[Any]] | None = None,
) -> NDArray[Any]:
    """Literal successive sampling of each anchor's partners over its whole pool, ``O(k N)`` (``g2 = 2 gamma^2``);
    continues from ``chosen[:, :count]`` when ``drawn = (chosen, count)`` is given (conditional on the partners
    already drawn: the same law)."""
    anchors, pool_ids, location, variance = cand.anchors, cand.pool_ids, cand.location, cand.variance
    k = anchors.size
    chosen: NDArray[Any]
    count: NDArray[Any]
    if drawn is None:
        chosen, count = np.full((k, m), -1, dtype=np.int64), np.zeros(k, dtype=np.int64)
    else:
        chosen, count = drawn
    chosen = chosen.copy()
    pool_m, pool_v = location[pool_ids], variance[pool_ids]
    for row in range(k):
        a, c = anchors[row], int(count[row])
        mask = ~np.isin(pool_ids, chosen[row, :c])
        if cand.self_in_pool:
            mask &= pool_ids != a
        logq = log_quality(location[a], variance[a], pool_m[mask], pool_v[mask], g2)
        chosen[row, c:] = successive(pool_ids[mask], logq, m - c, rng)
    return chosen
