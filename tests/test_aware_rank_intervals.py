"""Rank intervals of large aware projects (:func:`core.models.aware.ranks.rank_intervals`): the 95% interval of
each item's rank from the pooled draws, against the quantiles of many ranked draws and against the truth."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

from easl_toolkit.core.models.aware import posterior as ap
from easl_toolkit.core.models.aware import ranks as aware_ranks
from easl_toolkit.core.models.aware.fit import AwareState, Observations, fit


def _world(n: int, seed: int, per: tuple[int, int] = (2, 6), na: int = 200) -> tuple[Any, AwareState]:
    """A campaign of ``n`` items with 2-6 scores each from annotators with offsets, slopes and noise (M3-like)."""
    rng = np.random.default_rng(seed)
    truth = rng.beta(2, 2, n)
    off, slope, noise = rng.normal(0, 0.08, na), rng.uniform(0.6, 1.4, na), rng.uniform(0.08, 0.2, na)
    item = np.repeat(np.arange(n), rng.integers(per[0], per[1] + 1, n))
    a = rng.integers(na, size=item.size)
    x = np.clip(0.5 + off[a] + slope[a] * (truth[item] - 0.5) + noise[a] * rng.normal(size=item.size), 0, 1)
    return truth, fit(Observations.build(item, a, x, n_items=n))


def _ranked_draws(state: AwareState, n_draws: int, rng: np.random.Generator) -> tuple[Any, Any]:
    """2.5% and 97.5% quantiles of each item's rank over ``n_draws`` ranked posterior draws (the reference)."""
    ranks = np.stack([ap._ranks(ap.posterior_draws(state, 1, rng)[0]) for _ in range(n_draws)])
    low, high = np.quantile(ranks, [0.025, 0.975], axis=0, method="median_unbiased")
    return low, high


@pytest.mark.parametrize(("per", "seed"), [((2, 6), 1), ((20, 40), 2)])
def test_rank_intervals_match_the_quantiles_of_many_ranked_draws(per: tuple[int, int], seed: int) -> None:
    _, st = _world(2500, seed, per)
    ref_low, ref_high = _ranked_draws(st, 2000, np.random.default_rng(seed))
    low, high = ap.rank_intervals(st, np.random.default_rng(seed + 10))
    rank = ap._ranks(st.mu)
    width = np.mean(ref_high - ref_low)
    assert abs(np.mean(high - low) / width - 1.0) < 0.01  # measured 0.1-0.3%
    # the ends differ by about the reference's own Monte Carlo error (a few % of a width)
    assert np.mean(np.abs(low - ref_low)) < 0.03 * width and np.mean(np.abs(high - ref_high)) < 0.03 * width
    assert low.min() >= 0 and high.max() <= 2499 and np.all(low <= high)
    # the estimate's own rank: outside its interval about as often (draws spread wider than the estimates)
    inside, ref_inside = [np.mean((lo <= rank) & (rank <= hi)) for lo, hi in ((low, high), (ref_low, ref_high))]
    assert abs(inside - ref_inside) < 0.01 and inside > 0.9


def test_rank_intervals_cover_the_true_ranks() -> None:
    covered = []
    for seed in range(3):
        truth, st = _world(3000, 100 + seed)
        t_lo, t_hi = stats.rankdata(truth, "min") - 1, stats.rankdata(truth, "max") - 1
        low, high = ap.rank_intervals(st, np.random.default_rng(seed))
        covered.append(np.mean((low <= t_hi) & (high >= t_lo)))
    assert 0.93 <= np.mean(covered) <= 0.99  # measured 0.96 (ranked draws: 0.95-0.96)


def test_large_projects_read_rank_intervals_from_the_pooled_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    _, st = _world(ap.EAGER_MAX_ITEMS + 300, 5)
    calls: list[int] = []
    monkeypatch.setattr(ap.RankFigures, "_draw", lambda self, *a, **k: calls.append(1))
    figs = ap.rank_figures(st, np.random.default_rng(0))
    assert figs.n_draws == ap.pooled_draws(st.n_items, ap.default_draws(st.n_items)) and figs.n_draws % 2 == 0
    again = ap.rank_figures(st, np.random.default_rng(0))
    high_first = again.rank_high.copy()  # read in the other order: the same figures
    np.testing.assert_array_equal(figs.rank_low, again.rank_low)
    np.testing.assert_array_equal(figs.rank_high, high_first)
    assert calls == []


def test_pooled_draws_follow_the_pool_size() -> None:
    assert ap.pooled_draws(1_000_000, 20) == 2
    assert ap.pooled_draws(100_000, 200) == 20
    assert ap.pooled_draws(5_000, 200) == 200 and ap.pooled_draws(5_000, 51) == 50
    assert ap.pooled_draws(10**8, 20) == 2


def test_one_item_and_equal_items() -> None:
    st = fit(Observations.build(np.zeros(3, dtype=int), np.arange(3), np.array([0.2, 0.3, 0.4]), n_items=1))
    low, high = ap.rank_intervals(st, np.random.default_rng(0))
    assert low.tolist() == [0.0] and high.tolist() == [0.0]
    n = 50
    st = fit(Observations.build(np.repeat(np.arange(n), 2), np.tile([0, 1], n), np.full(2 * n, 0.5), n_items=n))
    low, high = ap.rank_intervals(st, np.random.default_rng(1))
    assert low.max() < 5 and high.min() > n - 6  # indistinguishable items: each could take almost any rank


def test_the_grid_gives_the_pooled_count() -> None:
    """The tabulated count, linear between grid points, against the count of the whole pool at each value."""
    rng = np.random.default_rng(3)
    pool = np.concatenate([rng.normal(0, 1, 200_000), rng.standard_t(3, 20_000) * 4])  # heavy tails
    y = rng.uniform(-3, 3, 10_000)
    lo, hi = float(y.min()), float(y.max())
    got = aware_ranks._lookup(aware_ranks._tabulate(pool, 2, lo, hi), y, lo, hi)
    exact = np.searchsorted(np.sort(pool), y) / 2
    assert np.max(np.abs(got - exact)) <= 4.0  # at most what one grid step holds (here up to 8 values, 4 counts)
    assert (
        aware_ranks._lookup(aware_ranks._tabulate(pool, 2, lo, hi), np.array([lo, hi]), lo, hi).tolist()
        == (np.searchsorted(np.sort(pool), [lo, hi]) / 2).tolist()
    )
