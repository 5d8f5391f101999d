"""Prediction-powered mean and OLS (core.campaign.ppi) against the formulas of ppi-python and PPI++."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from easl_toolkit.core.campaign.estimators import estimate
from easl_toolkit.core.campaign.ppi import ppi_mean_ci, ppi_ols_ci, ppi_ols_pointestimate


def _data(seed: int = 0, n: int = 200, big: int = 2000):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n + big, 2))
    x[:, 0] = 1.0
    y = 1.0 + 2.0 * x[:, 1] + rng.normal(size=n + big)
    yhat = y + rng.normal(scale=0.6, size=n + big) + 0.3
    return x[:n], y[:n], yhat[:n], x[n:], yhat[n:]


def test_ppi_mean_with_lambda_zero_is_the_classical_clt_interval() -> None:
    _, y, yhat, _, yu = _data()
    est, low, high = ppi_mean_ci(y, yhat, yu, alpha=0.05, lam=0.0)
    half = norm.ppf(0.975) * y.std() / np.sqrt(y.size)
    assert (est, low, high) == pytest.approx((y.mean(), y.mean() - half, y.mean() + half), rel=1e-12)


def test_ppi_mean_with_lambda_one_is_the_prediction_powered_interval_of_the_science_paper() -> None:
    _, y, yhat, _, yu = _data()
    est, low, high = ppi_mean_ci(y, yhat, yu, alpha=0.1, lam=1.0)
    rect = y - yhat
    se = np.sqrt(yu.std() ** 2 / yu.size + rect.std() ** 2 / y.size)
    assert est == pytest.approx(yu.mean() + rect.mean(), rel=1e-12)
    assert high - low == pytest.approx(2 * norm.ppf(0.95) * se, rel=1e-12)


def test_ppi_mean_power_tuning_is_the_ppi_plus_plus_lambda() -> None:
    _, y, yhat, _, yu = _data(seed=3)
    n, big = y.size, yu.size
    lam = np.cov(y, yhat, ddof=0)[0, 1] / ((1 + n / big) * np.var(np.concatenate([yhat, yu]), ddof=1))
    est, *_ = ppi_mean_ci(y, yhat, yu)
    assert est == pytest.approx(lam * yu.mean() + (y - lam * yhat).mean(), rel=1e-12)


def test_ppi_ols_with_lambda_zero_is_ols_with_the_hc0_sandwich() -> None:
    x, y, yhat, xu, yu = _data(seed=4)
    theta, low, high = ppi_ols_ci(x, y, yhat, xu, yu, alpha=0.05, lam=0.0)
    ols = np.linalg.lstsq(x, y, rcond=None)[0]
    resid = y - x @ ols
    bread = np.linalg.inv(x.T @ x)
    meat = (x * resid[:, None] ** 2).T @ x
    n = y.size
    se = np.sqrt(np.diag(bread @ meat @ bread) * n / (n - 1))  # ppi-python's np.cov uses ddof=1
    np.testing.assert_allclose(theta, ols, rtol=1e-10)
    np.testing.assert_allclose((high - low) / 2, norm.ppf(0.975) * se, rtol=1e-8)


def test_ppi_ols_point_estimate_is_imputed_plus_rectifier() -> None:
    x, y, yhat, xu, yu = _data(seed=5)
    theta = ppi_ols_pointestimate(x, y, yhat, xu, yu, lam=1.0)
    imputed = np.linalg.lstsq(xu, yu, rcond=None)[0]
    rectifier = np.linalg.lstsq(x, y - yhat, rcond=None)[0]
    np.testing.assert_allclose(theta, imputed + rectifier, rtol=1e-10)
    tuned, low, high = ppi_ols_ci(x, y, yhat, xu, yu)
    classical = ppi_ols_ci(x, y, yhat, xu, yu, lam=0.0)
    assert ((high - low) <= (classical[2] - classical[1]) * 1.001).all()


def test_the_classical_campaign_mean_under_uniform_probabilities_is_the_labelled_mean() -> None:
    _, y, yhat, _, yu = _data(seed=6)
    n, big = y.size, yu.size
    first = np.concatenate([y, np.full(big, np.nan)])[None]
    systems = np.concatenate([yhat, yu])[None, :, None]
    p = np.full(first.shape, n / (n + big))
    est = estimate(systems, first, np.full_like(first, np.nan), p, p, metrics=("mean",))
    assert est.value[0, 0] == pytest.approx(y.mean(), rel=1e-12)
