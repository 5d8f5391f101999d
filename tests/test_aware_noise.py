"""How far the annotator-aware model lets annotators' noise differ (core/models/aware/noise.py): alike annotators
get DA's weights, a random clicker is down-weighted whether it is one of twenty or one of a hundred."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from easl_toolkit.core.models.aware.fit import AwareConfig, Observations, fit
from easl_toolkit.core.models.aware.noise import NU_R_MAX, NU_R_OUTLIER, noise_shrinkage, noise_strengths


def _pool(n_items: int, n_annotators: int, per_item: int, seed: int, clickers: int = 0):
    rng = np.random.default_rng(seed)
    truth = rng.random(n_items)
    item = np.repeat(np.arange(n_items), per_item)
    ann = np.concatenate([rng.choice(n_annotators, per_item, replace=False) for _ in range(n_items)])
    x = np.clip(truth[item] + rng.normal(0, 0.15, item.size), 0, 1)
    spam = ann >= n_annotators - clickers
    x[spam] = rng.random(int(spam.sum()))
    return Observations.build(item, ann, x, n_items=n_items), truth


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alike_annotators_share_one_weight_but_those_standing_out_by_chance(seed):
    obs, _ = _pool(200, 20, 4, seed)
    noise = fit(obs).noise
    shared = np.abs(noise - np.median(noise)) < 1e-3
    assert shared.mean() >= 0.8 and noise.max() < 1.5


def test_one_random_clicker_among_a_hundred_is_down_weighted():
    obs, _ = _pool(400, 100, 8, 5, clickers=1)
    st_ = fit(obs)
    weight = st_.slope**2 / st_.noise
    assert weight[-1] < 0.25 * np.median(weight[:-1])
    assert st_.noise[:-1].std() < 0.2 and st_.noise[-1] > 4  # the others close together, the clicker far off


def test_random_clickers_lose_weight_as_with_a_fixed_shrinkage():
    obs, truth = _pool(150, 20, 6, 3, clickers=2)
    eb, fixed = fit(obs), fit(obs, config=AwareConfig(nu_r=8.0))
    assert eb.noise[-2:].min() > 3 and fixed.noise[-2:].min() > 3
    rho = [np.corrcoef(np.argsort(np.argsort(s.mu)), np.argsort(np.argsort(truth)))[0, 1] for s in (eb, fixed)]
    assert rho[0] >= rho[1] - 0.01


@given(st.integers(3, 60), st.floats(2.0, 500.0), st.integers(0, 2**32 - 1))
def test_strengths_lie_between_the_pools_and_the_outliers_and_fall_with_the_noise(n_annotators, n_scores, seed):
    rng = np.random.default_rng(seed)
    n = np.full(n_annotators, n_scores)
    ratio = rng.chisquare(n_scores, n_annotators) / n_scores * np.exp(rng.normal(0, 0.5, n_annotators))
    nu = noise_strengths(ratio, n)
    pool = noise_shrinkage(ratio, n)
    assert 2.0 <= pool <= NU_R_MAX
    assert np.all((nu >= min(pool, NU_R_OUTLIER) * (1 - 1e-9)) & (nu <= max(pool, NU_R_OUTLIER) * (1 + 1e-9)))
    order = np.argsort(ratio)
    assert np.all(np.diff(nu[order]) <= 1e-9 * pool)  # noisier, never shrunk harder
