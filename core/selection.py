"""Which items to annotate next: Algorithm 1 of Sakaguchi & Van Durme (2018) and its exact scalable form.

Algorithm 1 ("SampleByMatchQuality"): take the ``k`` items with the largest variance as anchors; for each
anchor draw ``n - 1`` partners without replacement with probability proportional to the match quality
(eq 11 / 23)

    q(i, j) = sqrt(2 gamma^2 / c^2) exp(-(M_i - M_j)^2 / (2 c^2)),   c^2 = 2 gamma^2 + Var_i + Var_j,

normalised over the candidate pool (the paper: the items that are not anchors; option: every item but the
anchor). Drawing "without replacement with probability proportional to q" means successive sampling: each
draw picks ``j`` with probability ``q(i, j) / sum of q over the pool items not yet drawn`` (what
``numpy.random.Generator.choice(replace=False, p=q / q.sum())`` does). :func:`select_hits_literal` does
exactly that in ``O(k N)``; :func:`select_hits` draws from the same distribution without evaluating all
``k x N`` pairs (rejection sampling from a binned envelope, below).

The first iteration covers every item once (:func:`first_iteration_hits`); the DA baseline annotates the
least-annotated items in batches (:func:`select_least_annotated`). All randomness comes from the
``numpy.random.Generator`` passed in, so the same seed gives the same HITs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.partner_sampling import (
    DEFAULT_BINS,
    DEFAULT_MAX_ROUNDS,
    Candidates,
    Envelope,
    partners,
    partners_direct,
)

DIRECT_BELOW = 5


@dataclass(frozen=True, eq=False)
class HitRequest:
    """Which HITs Algorithm 1 draws: ``n_hits`` anchors, each with ``hit_size - 1`` partners drawn by the match
    quality of ``gamma`` (eq 11 / 23) from the ``pool`` (``"paper"``: the eligible non-anchors; ``"all"``: every
    eligible item but the anchor), none of the items marked in ``exclude`` (a boolean mask; None: none)."""

    hit_size: int
    n_hits: int
    gamma: float
    pool: str = "paper"
    exclude: Any = None


@dataclass(frozen=True)
class Sampler:
    """How :func:`select_hits` draws (the speed, never the distribution): the binned envelope of the partner
    sampler (``n_bins`` bins, at most ``max_rounds`` rounds; :class:`core.partner_sampling.Envelope`), and the
    literal ``O(k N)`` computation below ``direct_below`` anchors."""

    n_bins: int = DEFAULT_BINS
    max_rounds: int = DEFAULT_MAX_ROUNDS
    direct_below: int = DIRECT_BELOW


def match_quality(m_i: Any, v_i: Any, m_j: Any, v_j: Any, gamma: float) -> NDArray[Any]:
    """Match quality of items ``i`` and ``j`` (eq 11 / 23), broadcasting.

    ``q = sqrt(2 gamma^2 / c^2) exp(-(M_i - M_j)^2 / (2 c^2))`` with ``c^2 = 2 gamma^2 + Var_i + Var_j``;
    ``M`` is the posterior location (EASL / RA: the Beta mode, eq 12; TrueSkill: mu) and ``Var`` the
    posterior variance (eq 13 / sigma^2).
    """
    m_i, v_i, m_j, v_j = (np.asarray(x, dtype=np.float64) for x in (m_i, v_i, m_j, v_j))
    c2 = 2.0 * gamma * gamma + v_i + v_j
    out: NDArray[Any] = np.sqrt(2.0 * gamma * gamma / c2) * np.exp(-((m_i - m_j) ** 2) / (2.0 * c2))
    return out


def first_iteration_hits(n_items: int, hit_size: int, rng: np.random.Generator) -> NDArray[Any]:
    """HITs covering every item exactly once (the authors' release; docs/design.md section 3).

    A random permutation cut into ``ceil(N / n)`` HITs of ``n``; the last HIT, if short, is padded with
    distinct items not already in it (drawn uniformly from the other items). With ``N < n`` there is one HIT
    of all ``N`` items; with ``N = 0``, none.

    Returns
    -------
    ndarray of int64, shape ``(ceil(N / n), min(n, N))``
    """
    if n_items < 0 or hit_size < 1:
        raise ValueError("n_items must be >= 0 and hit_size >= 1")
    width = min(hit_size, n_items)
    if n_items == 0:
        return np.zeros((0, hit_size), dtype=np.int64)
    perm = rng.permutation(n_items).astype(np.int64)
    n_hits = -(-n_items // width)
    pad = n_hits * width - n_items
    if pad:
        last = width - pad  # items in the last, short HIT: perm[n_items - last:]
        others = perm[: n_items - last]
        extra = rng.choice(others, size=pad, replace=False)
        perm = np.concatenate([perm, extra])
    return perm.reshape(n_hits, width)


def select_least_annotated(
    counts: Any,
    *,
    hit_size: int,
    n_hits: int,
    rng: np.random.Generator,
    exclude: Any = None,
) -> NDArray[Any]:
    """DA's batches (the paper's baseline, section 5): the least-annotated items, grouped into HITs.

    Items are ordered by ``counts`` ascending with a seeded random tie-break; the first
    ``min(n_hits * n, N_eligible)`` are shuffled and cut into HITs of ``n``; a short last HIT is padded with
    the next least-annotated items not in it (with ``N_eligible < n``: one HIT of all eligible items).

    Returns
    -------
    ndarray of int64, shape ``(H, min(n, N_eligible))``
    """
    counts = np.asarray(counts, dtype=np.float64)
    eligible = _eligible(counts.size, exclude)
    idx = np.flatnonzero(eligible)
    width = min(hit_size, idx.size)
    if n_hits <= 0 or idx.size == 0:
        return np.zeros((0, width if idx.size else hit_size), dtype=np.int64)
    perm = rng.permutation(idx.size)
    order = idx[perm[np.argsort(counts[idx][perm], kind="stable")]]
    total = min(n_hits * width, idx.size)
    n_out = -(-total // width)
    chosen = rng.permutation(order[:total])
    pad = n_out * width - total
    if pad:
        # next least-annotated items not in the last HIT: first those not selected at all, then earlier HITs'
        rest = np.concatenate([order[total:], chosen[: total - (width - pad)]])
        chosen = np.concatenate([chosen, rest[:pad]])
    return chosen.reshape(n_out, width).astype(np.int64)


def _eligible(n: int, exclude: Any) -> NDArray[Any]:
    if exclude is None:
        return np.ones(n, dtype=bool)
    exclude = np.asarray(exclude, dtype=bool)
    if exclude.shape != (n,):
        raise ValueError(f"exclude must be a boolean mask of length {n}")
    keep: NDArray[Any] = ~exclude
    return keep


def _check_keys(location: Any, variance: Any) -> tuple[NDArray[Any], NDArray[Any]]:
    location = np.asarray(location, dtype=np.float64).ravel()
    variance = np.asarray(variance, dtype=np.float64).ravel()
    if location.shape != variance.shape:
        raise ValueError("location and variance differ in length")
    if not (np.all(np.isfinite(location)) and np.all(np.isfinite(variance)) and np.all(variance >= 0)):
        raise ValueError("location and variance must be finite, variance >= 0")
    return location, variance


def _anchors_and_pool(
    location: NDArray[Any], variance: NDArray[Any], request: HitRequest, rng: np.random.Generator
) -> tuple[NDArray[Any], NDArray[Any], int]:
    """Anchors (top-variance eligible items, seeded random tie-break) and the partner pool."""
    from easl_toolkit.core.models.hyper import (
        PARTNER_POOLS,  # the one definition of the pools (Hyper validates with it too)
    )

    pool, hit_size = request.pool, request.hit_size
    if pool not in PARTNER_POOLS:
        raise ValueError(f"pool must be one of {PARTNER_POOLS}, got {pool!r}")
    if hit_size < 1:
        raise ValueError("hit_size must be >= 1")
    eligible = _eligible(location.size, request.exclude)
    idx = np.flatnonzero(eligible)
    k = max(0, min(int(request.n_hits), idx.size))
    if 0 < k < idx.size:
        # the top k by variance: everything above the k-th largest value, plus a uniform random subset of
        # the items tied with it (O(N) selection instead of a full sort)
        neg = -variance[idx]
        kth = np.partition(neg, k - 1)[k - 1]
        better = idx[neg < kth]
        tied = idx[neg == kth]
        top = np.concatenate([better, tied[rng.choice(tied.size, size=k - better.size, replace=False)]])
    else:
        top = idx[:k]
    perm = rng.permutation(top)
    anchors = perm[np.argsort(-variance[perm], kind="stable")]  # descending variance, random among ties
    if pool == "paper":
        rest = eligible.copy()
        rest[anchors] = False
        pool_ids = np.flatnonzero(rest)
        n_partners = min(hit_size - 1, pool_ids.size)
    else:
        pool_ids = idx
        n_partners = min(hit_size - 1, max(idx.size - 1, 0))
    return anchors.astype(np.int64), pool_ids, n_partners


def select_hits_literal(location: Any, variance: Any, request: HitRequest, rng: np.random.Generator) -> NDArray[Any]:
    """Algorithm 1 literally, ``O(k N)``: for each anchor compute ``q`` against its whole pool and draw the
    partners with ``Generator.choice(replace=False, p=q / q.sum())`` (:func:`core.partner_sampling.partners_direct`,
    from the whole pool). The reference for tests and the
    benchmark; same arguments and result shape as :func:`select_hits`.
    """
    location, variance = _check_keys(location, variance)
    anchors, pool_ids, m = _anchors_and_pool(location, variance, request, rng)
    cand = Candidates(anchors, pool_ids, location, variance, self_in_pool=request.pool == "all")
    found = partners_direct(cand, m, 2.0 * request.gamma * request.gamma, rng)
    return np.column_stack([anchors, found]).astype(np.int64)


def select_hits(
    location: Any, variance: Any, request: HitRequest, rng: np.random.Generator, sampler: Sampler = Sampler()
) -> NDArray[Any]:
    """Algorithm 1 (SampleByMatchQuality), exact and sub-quadratic.

    ``request`` (:class:`HitRequest`) says what to draw. Anchors: the ``n_hits`` eligible items of largest
    ``variance`` (ties in seeded random order). Partners: for each anchor ``i``, ``min(n - 1, pool size)`` items
    drawn without replacement with probability proportional to ``q(i, j)`` (eq 11 / 23) from the pool: ``"paper"``,
    the eligible non-anchors; ``"all"``, every eligible item but the anchor. ``exclude`` (boolean mask) removes
    items from anchors and pool.

    Method (exact; the same distribution as :func:`select_hits_literal`): the pool is sorted by ``M`` and cut
    into ``B`` bins of equal count. For anchor ``i`` and bin ``b`` with location range ``[lo_b, hi_b]`` and
    variances in ``[vmin_b, vmax_b]``,

        U_ib = sqrt(2 gamma^2 / (2 gamma^2 + V_i + vmin_b)) exp(-d_ib^2 / (2 (2 gamma^2 + V_i + vmax_b)))

    with ``d_ib`` the distance from ``M_i`` to ``[lo_b, hi_b]``, bounds ``q(i, j)`` for every ``j`` in the bin.
    A proposal picks bin ``b`` with probability proportional to ``|b| U_ib``, then ``j`` uniformly in it, and
    is accepted with probability ``q(i, j) / U_ib``: accepted items are distributed proportionally to
    ``q(i, j)`` over the pool. Proposals equal to an item already drawn (or to the anchor, pool "all") are
    rejected and drawing goes on, which is successive sampling without replacement. Every anchor's
    proposals are processed in order, vectorised over anchors in rounds; anchors still short after
    ``max_rounds`` rounds finish with the literal computation (a conditional continuation, also exact).
    Cost ``O(N log N + k B + k n / acceptance)``. With fewer than ``direct_below`` anchors (streaming mode
    draws one HIT at a time) the literal ``O(k N)`` computation is cheaper than sorting the pool and is used.
    ``sampler`` (:class:`Sampler`: ``n_bins``, ``max_rounds`` and ``direct_below``) changes the speed, never the
    distribution.

    Returns
    -------
    ndarray of int64, shape ``(min(n_hits, N_eligible), 1 + n_partners)``
        One HIT per row, the anchor in column 0, partners in draw order.
    """
    location, variance = _check_keys(location, variance)
    anchors, pool_ids, m = _anchors_and_pool(location, variance, request, rng)
    out = np.empty((anchors.size, m + 1), dtype=np.int64)
    out[:, 0] = anchors
    if m == 0 or anchors.size == 0:
        return out
    rounds = 0 if anchors.size < sampler.direct_below else sampler.max_rounds
    cand = Candidates(anchors, pool_ids, location, variance, self_in_pool=request.pool == "all")
    out[:, 1:] = partners(cand, m, request.gamma, rng, Envelope(sampler.n_bins, rounds))
    return out
