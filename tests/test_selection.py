"""Tests of core.selection: reference match qualities, coverage of the first iteration, DA batches,
Algorithm 1's invariants, reproducibility, and exactness of the scalable sampler (goodness of fit against
the exact successive-sampling law and against the literal O(kN) algorithm)."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from easl_toolkit.core.models import beta_mode, beta_variance
from easl_toolkit.core.selection import (
    HitRequest,
    Sampler,
    first_iteration_hits,
    match_quality,
    select_hits,
    select_hits_literal,
    select_least_annotated,
)

PRIOR_V = 1 / 12

# ---------------------------------------------------------------------------------------------------
# match quality (docs/design.md section 5, gamma = 0.1)
# ---------------------------------------------------------------------------------------------------


def test_match_quality_reference_values():
    assert match_quality(0.5, PRIOR_V, 0.5, PRIOR_V, 0.1) == pytest.approx(0.3273268, abs=1e-7)
    assert match_quality(0.5, PRIOR_V, 0.8, 0.06, 0.1) == pytest.approx(0.2656593, abs=1e-7)
    q = match_quality(0.5, PRIOR_V, np.array([0.5, 0.6, 0.8, 1.0]), 0.06, 0.1)
    np.testing.assert_allclose(q, [0.349927, 0.339377, 0.265659, 0.162783], atol=1e-6)
    np.testing.assert_allclose(q / q.sum(), [0.313065, 0.303626, 0.237674, 0.145635], atol=1e-6)


def test_match_quality_is_symmetric_and_bounded():
    rng = np.random.default_rng(0)
    m1, m2 = rng.random(50), rng.random(50)
    v1, v2 = rng.random(50) / 12, rng.random(50) / 12
    q = match_quality(m1, v1, m2, v2, 0.1)
    np.testing.assert_allclose(q, match_quality(m2, v2, m1, v1, 0.1))
    assert np.all((q > 0) & (q <= 1))


# ---------------------------------------------------------------------------------------------------
# first iteration
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_items,hit_size", [(10, 5), (11, 5), (14, 5), (3, 5), (5, 5), (1, 5), (7, 2)])
def test_first_iteration_covers_every_item_once(n_items, hit_size):
    hits = first_iteration_hits(n_items, hit_size, np.random.default_rng(1))
    width = min(hit_size, n_items)
    assert hits.shape == (-(-n_items // width), width) and hits.dtype == np.int64
    assert set(hits.ravel().tolist()) == set(range(n_items))
    for row in hits:
        assert len(set(row.tolist())) == width  # padding never duplicates within a HIT
    # every item exactly once, except the padding of the last HIT
    counts = np.bincount(hits.ravel(), minlength=n_items)
    assert counts.sum() - n_items == hits.size - n_items
    assert np.all(counts[np.setdiff1d(np.arange(n_items), hits[-1])] == 1)


def test_first_iteration_divisible_has_no_padding_and_empty_is_empty():
    hits = first_iteration_hits(20, 5, np.random.default_rng(0))
    assert np.array_equal(np.sort(hits.ravel()), np.arange(20))
    assert first_iteration_hits(0, 5, np.random.default_rng(0)).shape == (0, 5)


def test_first_iteration_is_reproducible_and_random():
    a = first_iteration_hits(23, 5, np.random.default_rng(7))
    b = first_iteration_hits(23, 5, np.random.default_rng(7))
    c = first_iteration_hits(23, 5, np.random.default_rng(8))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


# ---------------------------------------------------------------------------------------------------
# DA batches
# ---------------------------------------------------------------------------------------------------


def test_least_annotated_takes_lowest_counts():
    counts = np.array([3, 0, 5, 1, 0, 2, 9, 1, 0, 4])
    hits = select_least_annotated(counts, hit_size=3, n_hits=2, rng=np.random.default_rng(0))
    assert hits.shape == (2, 3)
    assert sorted(hits.ravel().tolist()) == sorted([1, 4, 8, 3, 7, 5])


def test_least_annotated_breaks_ties_at_random_and_reproducibly():
    counts = np.zeros(20)
    picks = [
        frozenset(select_least_annotated(counts, hit_size=5, n_hits=1, rng=np.random.default_rng(s)).ravel())
        for s in range(10)
    ]
    assert len(set(picks)) > 1
    again = select_least_annotated(counts, hit_size=5, n_hits=1, rng=np.random.default_rng(3))
    assert frozenset(again.ravel()) == picks[3]


def test_least_annotated_padding_exclude_and_degenerate():
    counts = np.arange(7)
    hits = select_least_annotated(counts, hit_size=3, n_hits=5, rng=np.random.default_rng(0))
    assert hits.shape == (3, 3)
    assert set(hits.ravel().tolist()) == set(range(7))
    assert all(len(set(r.tolist())) == 3 for r in hits)
    excl = np.zeros(7, dtype=bool)
    excl[[0, 1]] = True
    hits = select_least_annotated(counts, hit_size=3, n_hits=1, rng=np.random.default_rng(0), exclude=excl)
    assert sorted(hits.ravel().tolist()) == [2, 3, 4]
    hits = select_least_annotated(counts[:2], hit_size=3, n_hits=4, rng=np.random.default_rng(0))
    assert hits.shape == (1, 2)
    assert select_least_annotated(counts, hit_size=3, n_hits=0, rng=np.random.default_rng(0)).shape[0] == 0
    assert select_least_annotated(np.zeros(0), hit_size=3, n_hits=2, rng=np.random.default_rng(0)).shape == (0, 3)


# ---------------------------------------------------------------------------------------------------
# Algorithm 1: invariants
# ---------------------------------------------------------------------------------------------------


def _campaign_keys(n, rng):
    """Mid-campaign Beta posteriors: items with 0..30 scores around a latent value."""
    cnt = rng.integers(0, 30, n)
    true = rng.beta(2, 2, n)
    a = 1 + cnt * true
    b = 1 + cnt * (1 - true)
    return beta_mode(a, b), beta_variance(a, b)


@pytest.mark.parametrize("pool", ["paper", "all"])
def test_select_hits_basic_invariants(pool):
    rng = np.random.default_rng(3)
    loc, var = _campaign_keys(500, rng)
    hits = select_hits(loc, var, HitRequest(hit_size=5, n_hits=100, gamma=0.1, pool=pool), rng)
    assert hits.shape == (100, 5) and hits.dtype == np.int64
    anchors = hits[:, 0]
    # anchors are the top-variance items, in descending order
    assert np.array_equal(np.sort(var[anchors])[::-1], var[anchors])
    assert var[anchors].min() >= np.sort(var)[::-1][99]
    for row in hits:
        assert len(set(row.tolist())) == 5
    if pool == "paper":
        assert not np.isin(hits[:, 1:], anchors).any()


def test_anchor_ties_are_broken_at_random_reproducibly():
    loc = np.full(50, 0.5)
    var = np.full(50, PRIOR_V)
    runs = [
        select_hits(loc, var, HitRequest(hit_size=5, n_hits=10, gamma=0.1), np.random.default_rng(s)) for s in range(6)
    ]
    assert len({frozenset(r[:, 0].tolist()) for r in runs}) > 1
    again = select_hits(loc, var, HitRequest(hit_size=5, n_hits=10, gamma=0.1), np.random.default_rng(2))
    assert np.array_equal(again, runs[2])


@pytest.mark.parametrize("pool", ["paper", "all"])
def test_exclude_removes_items_from_anchors_and_pool(pool):
    rng = np.random.default_rng(4)
    loc, var = _campaign_keys(200, rng)
    excl = np.zeros(200, dtype=bool)
    excl[np.argsort(-var)[:30]] = True  # the 30 most uncertain are in open HITs
    excl[rng.choice(200, 40, replace=False)] = True
    hits = select_hits(loc, var, HitRequest(hit_size=4, n_hits=25, gamma=0.1, pool=pool, exclude=excl), rng)
    assert not excl[hits].any()
    assert var[hits[:, 0]].min() >= np.sort(var[~excl])[::-1][24]


def test_partners_capped_at_pool_size_and_degenerate_inputs():
    loc = np.array([0.1, 0.5, 0.9])
    var = np.array([0.08, 0.07, 0.01])
    # paper: 2 anchors, pool of 1 -> one partner each
    hits = select_hits(loc, var, HitRequest(hit_size=5, n_hits=2, gamma=0.1, pool="paper"), np.random.default_rng(0))
    assert hits.shape == (2, 2) and np.all(hits[:, 1] == 2)
    # all: every other item
    hits = select_hits(loc, var, HitRequest(hit_size=5, n_hits=2, gamma=0.1, pool="all"), np.random.default_rng(0))
    assert hits.shape == (2, 3)
    assert [set(r.tolist()) for r in hits] == [{0, 1, 2}, {0, 1, 2}]
    # more HITs than items: capped; no items: empty; one item: a HIT of one
    assert select_hits(
        loc, var, HitRequest(hit_size=2, n_hits=9, gamma=0.1, pool="all"), np.random.default_rng(0)
    ).shape == (
        3,
        2,
    )
    assert select_hits(
        loc[:0], var[:0], HitRequest(hit_size=5, n_hits=3, gamma=0.1), np.random.default_rng(0)
    ).shape == (0, 1)
    assert select_hits(
        loc[:1], var[:1], HitRequest(hit_size=5, n_hits=3, gamma=0.1), np.random.default_rng(0)
    ).tolist() == [[0]]
    excl = np.ones(3, dtype=bool)
    assert (
        select_hits(
            loc, var, HitRequest(hit_size=5, n_hits=1, gamma=0.1, exclude=excl), np.random.default_rng(0)
        ).shape[0]
        == 0
    )
    with pytest.raises(ValueError):
        select_hits(loc, var, HitRequest(hit_size=5, n_hits=1, gamma=0.1, pool="friends"), np.random.default_rng(0))
    with pytest.raises(ValueError):
        select_hits(loc, var * np.nan, HitRequest(hit_size=5, n_hits=1, gamma=0.1), np.random.default_rng(0))


def test_unbounded_locations_and_tiny_gamma_do_not_crash():
    """TrueSkill locations are unbounded; with a tiny gamma far items have q that underflows."""
    loc = np.array([0.0, 0.01, 50.0, -80.0, 1e6, 0.02])
    var = np.array([0.08, 0.001, 0.001, 0.001, 0.001, 0.002])
    fast = [lambda *a, d=d: select_hits(*a, Sampler(direct_below=d)) for d in (0, 5)]
    for fn in [*fast, select_hits_literal]:
        hits = fn(loc, var, HitRequest(hit_size=6, n_hits=1, gamma=1e-4, pool="paper"), np.random.default_rng(0))
        assert hits.shape == (1, 6) and len(set(hits[0].tolist())) == 6
        # the two nearest are drawn first (the others' weights underflow)
        assert set(hits[0, 1:3].tolist()) == {1, 5}


@pytest.mark.parametrize("n_hits", [1, 200])
def test_select_hits_reproducible(n_hits):
    rng = np.random.default_rng(9)
    loc, var = _campaign_keys(1000, rng)
    a = select_hits(loc, var, HitRequest(hit_size=5, n_hits=n_hits, gamma=0.1), np.random.default_rng(11))
    b = select_hits(loc, var, HitRequest(hit_size=5, n_hits=n_hits, gamma=0.1), np.random.default_rng(11))
    c = select_hits(loc, var, HitRequest(hit_size=5, n_hits=n_hits, gamma=0.1), np.random.default_rng(12))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 60),
    hit_size=st.integers(2, 7),
    n_hits=st.integers(0, 20),
    pool=st.sampled_from(["paper", "all"]),
    gamma=st.sampled_from([0.01, 0.1, 1.0]),
    seed=st.integers(0, 2**31),
    n_bins=st.sampled_from([1, 3, 32]),
    max_rounds=st.sampled_from([0, 1, 64]),
    direct_below=st.sampled_from([0, 5]),
)
def test_select_hits_properties(n, hit_size, n_hits, pool, gamma, seed, n_bins, max_rounds, direct_below):
    rng = np.random.default_rng(seed)
    loc, var = _campaign_keys(n, rng)
    excl = rng.random(n) < 0.2
    hits = select_hits(
        loc,
        var,
        HitRequest(hit_size=hit_size, n_hits=n_hits, gamma=gamma, pool=pool, exclude=excl),
        rng,
        Sampler(n_bins=n_bins, max_rounds=max_rounds, direct_below=direct_below),
    )
    n_elig = int((~excl).sum())
    k = min(n_hits, n_elig)
    assert hits.shape[0] == k
    if k == 0:
        return
    pool_size = n_elig - k if pool == "paper" else n_elig - 1
    assert hits.shape[1] == 1 + min(hit_size - 1, pool_size)
    assert not excl[hits].any()
    for row in hits:
        assert len(set(row.tolist())) == row.size  # no duplicate item within a HIT
    anchors = hits[:, 0]
    assert len(set(anchors.tolist())) == k
    assert var[anchors].min() >= np.sort(var[~excl])[::-1][k - 1]  # anchors are the top-variance items
    if pool == "paper":
        assert not np.isin(hits[:, 1:], anchors).any()


# ---------------------------------------------------------------------------------------------------
# Exactness: the scalable sampler draws from the literal algorithm's distribution
# ---------------------------------------------------------------------------------------------------


def _exact_set_probabilities(q: np.ndarray, m: int) -> dict[frozenset, float]:
    """Law of the unordered set drawn by successive sampling of m of len(q) with weights q."""
    probs: dict[frozenset, float] = {}
    for seq in itertools.permutations(range(q.size), m):
        p, left = 1.0, q.sum()
        for j in seq:
            p *= q[j] / left
            left -= q[j]
        key = frozenset(seq)
        probs[key] = probs.get(key, 0.0) + p
    return probs


def _gof(counts: Counter, probs: dict, n: int) -> float:
    """Chi-square goodness-of-fit p value, pooling categories with expected count < 5."""
    keys = sorted(probs, key=lambda s: -probs[s])
    obs, exp = [], []
    small_o = small_e = 0.0
    for s in keys:
        e = probs[s] * n
        if e < 5:
            small_o += counts.get(s, 0)
            small_e += e
        else:
            obs.append(counts.get(s, 0))
            exp.append(e)
    if small_e > 0:
        obs.append(small_o)
        exp.append(small_e)
    assert sum(counts.values()) == n and set(counts) <= set(probs)
    return float(stats.chisquare(obs, exp).pvalue)


def _small_case():
    loc = np.array([0.50, 0.10, 0.35, 0.45, 0.62, 0.80, 0.95, 0.55])
    var = np.array([0.080, 0.075, 0.010, 0.030, 0.002, 0.050, 0.020, 0.006])
    return loc, var


@pytest.mark.parametrize(
    "pool,gamma,n_bins,max_rounds",
    [("paper", 0.1, 32, 64), ("all", 0.1, 32, 64), ("all", 0.03, 2, 64), ("paper", 0.05, 1, 1), ("all", 0.1, 3, 0)],
)
def test_fast_sampler_matches_exact_law_and_literal(pool, gamma, n_bins, max_rounds):
    """Partner sets of a fixed anchor over many draws: chi-square against the exact successive-sampling
    law, and a contingency test of fast vs literal samples."""
    loc, var = _small_case()
    hit_size, n_hits, reps = 4, 2, 3000
    anchor = 0  # the largest variance: always the first anchor
    fast, lit = Counter(), Counter()
    for rep in range(reps):
        h = select_hits(
            loc,
            var,
            HitRequest(hit_size=hit_size, n_hits=n_hits, gamma=gamma, pool=pool),
            np.random.default_rng(10_000 + rep),
            Sampler(n_bins=n_bins, max_rounds=max_rounds, direct_below=0),
        )
        assert h[0, 0] == anchor
        fast[frozenset(h[0, 1:].tolist())] += 1
        h = select_hits_literal(
            loc, var, HitRequest(hit_size=hit_size, n_hits=n_hits, gamma=gamma, pool=pool), np.random.default_rng(rep)
        )
        lit[frozenset(h[0, 1:].tolist())] += 1
    anchors = {0, 1}
    cand = [j for j in range(loc.size) if j != anchor and (pool == "all" or j not in anchors)]
    q = match_quality(loc[anchor], var[anchor], loc[cand], var[cand], gamma)
    probs = {frozenset(cand[j] for j in s): p for s, p in _exact_set_probabilities(q, hit_size - 1).items()}
    assert _gof(fast, probs, reps) > 1e-3
    assert _gof(lit, probs, reps) > 1e-3
    keys = sorted(set(fast) | set(lit), key=sorted)
    table = np.array([[fast.get(k, 0) for k in keys], [lit.get(k, 0) for k in keys]])
    table = table[:, table.sum(axis=0) >= 10]
    assert stats.chi2_contingency(table).pvalue > 1e-3


def test_fast_sampler_ordered_draws_at_scale_match_exact_law():
    """Thousands of identical anchors (pool "paper") give i.i.d. ordered draws of 2 partners from 6 items
    with spread locations and variances: chi-square of the 30 ordered pairs against the exact law."""
    k, pool_loc = 6000, np.array([0.05, 0.3, 0.42, 0.5, 0.77, 0.99])
    pool_var = np.array([0.002, 0.05, 0.01, 0.0005, 0.03, 0.07])
    loc = np.concatenate([np.full(k, 0.45), pool_loc])
    var = np.concatenate([np.full(k, 0.08), pool_var])
    hits = select_hits(
        loc, var, HitRequest(hit_size=3, n_hits=k, gamma=0.05), np.random.default_rng(2), Sampler(n_bins=3)
    )
    assert np.all(hits[:, 0] < k) and np.all(hits[:, 1:] >= k)
    seqs = Counter(map(tuple, (hits[:, 1:] - k).tolist()))
    q = match_quality(0.45, 0.08, pool_loc, pool_var, 0.05)
    keys = list(itertools.permutations(range(6), 2))
    probs = np.array([q[a] / q.sum() * q[b] / (q.sum() - q[a]) for a, b in keys])
    obs = np.array([seqs.get(kk, 0) for kk in keys])
    assert obs.sum() == k
    assert stats.chisquare(obs, probs * k).pvalue > 1e-3


@pytest.mark.parametrize("gamma,n_bins", [(0.1, 32), (0.02, 32), (0.05, 7)])
def test_fast_sampler_single_partner_law_with_many_items_per_bin(gamma, n_bins):
    """20,000 identical anchors each draw one partner from 300 items (about 10 per bin, spread locations and
    variances): chi-square of the partner counts against q / sum q."""
    rng = np.random.default_rng(21)
    k, n_pool = 20_000, 300
    pool_loc, pool_var = _campaign_keys(n_pool, rng)
    loc = np.concatenate([np.full(k, 0.3), pool_loc])
    var = np.concatenate([np.full(k, 0.09), pool_var])
    hits = select_hits(
        loc, var, HitRequest(hit_size=2, n_hits=k, gamma=gamma), np.random.default_rng(5), Sampler(n_bins=n_bins)
    )
    counts = np.bincount(hits[:, 1] - k, minlength=n_pool)
    q = match_quality(0.3, 0.09, pool_loc, pool_var, gamma)
    expected = q / q.sum() * k
    big = expected >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp).pvalue > 1e-3
