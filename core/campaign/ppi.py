"""Prediction-powered inference for a mean and for OLS coefficients in the labelled / unlabelled form, with the
formulas of the reference package ``ppi-python`` (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic 2023,
"Prediction-powered inference", Science 382; PPI++: Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453).

Data: n labelled responses (Y, Yhat) and N unlabelled ones (Yhat_u); a metric estimate of a campaign uses
:mod:`core.campaign.estimators` instead (one population, design weights); these functions exist so the toolkit's
prediction-powered machinery can be checked against the published package's definitions.

Mean (PPI++ section 2, eq. 5 there): theta_hat(lambda) = lambda mean(Yhat_u) + mean(Y - lambda Yhat); interval
theta_hat +- z_{1-alpha/2} sqrt(sd(lambda Yhat_u)^2 / N + sd(Y - lambda Yhat)^2 / n), sds with ddof=0.

OLS (PPI++ section 3 and Example 3.1): theta_hat(lambda) = OLS(X_u, lambda Yhat_u) + OLS(X, Y - lambda Yhat);
with gradients g_i = x_i (x_i'theta - Y_i), ghat_i = x_i (x_i'theta - Yhat_i) (and on the unlabelled data) and the
Hessian H = sum over all n + N responses of x x' / (n + N) (labelled only when lambda = 0),
Sigma = H^-1 (n / N Cov(lambda ghat_u) + Cov(g - lambda ghat)) H^-1 (covariances with ddof=1), interval
theta_hat +- z sqrt(diag(Sigma) / n).

Power tuning (``ppi-python`` ``_calc_lam_glm``, PPI++ eq. 8 there): with centred gradients,
lambda = tr(H^-1 C H^-1) / (2 (1 + n / N) tr(H^-1 V H^-1)), C = (g_c' ghat_c + ghat_c' g_c) / n and V the covariance
(ddof=1) of ghat over labelled and unlabelled responses together, clipped to [0, 1]. As in the package, lambda is
computed at the lambda = 1 estimate for the mean, and for OLS at the estimate tuned once (its interval re-tunes at
that point).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import norm


def _lam(grads: NDArray[Any], grads_hat: NDArray[Any], grads_hat_u: NDArray[Any], inv_h: NDArray[Any]) -> float:
    """PPI++ power-tuning parameter (``ppi-python`` ``_calc_lam_glm``, overall mode, clipped to [0, 1])."""
    n, N = grads.shape[0], grads_hat_u.shape[0]
    gc = grads - grads.mean(axis=0)
    hc = grads_hat - grads_hat.mean(axis=0)
    cov = (gc.T @ hc + hc.T @ gc) / n
    var = np.atleast_2d(np.cov(np.concatenate([grads_hat, grads_hat_u]).T))
    num = np.trace(inv_h @ cov @ inv_h)
    den = 2.0 * (1.0 + n / N) * np.trace(inv_h @ var @ inv_h)
    return float(np.clip(num / den, 0.0, 1.0))


def ppi_mean_ci(
    y: ArrayLike, yhat: ArrayLike, yhat_unlabeled: ArrayLike, *, alpha: float = 0.1, lam: float | None = None
) -> tuple[float, float, float]:
    """(estimate, low, high) of the prediction-powered mean (module docstring); ``lam`` None tunes it."""
    y_, yh, yu = (np.asarray(v, dtype=np.float64) for v in (y, yhat, yhat_unlabeled))
    n, N = y_.size, yu.size
    if lam is None:
        theta1 = yu.mean() + (y_ - yh).mean()
        lam = _lam((y_ - theta1)[:, None], (yh - theta1)[:, None], (yu - theta1)[:, None], np.eye(1))
    est = lam * yu.mean() + (y_ - lam * yh).mean()
    se = np.sqrt((lam * yu).std() ** 2 / N + (y_ - lam * yh).std() ** 2 / n)
    z = float(norm.ppf(1 - alpha / 2))
    return float(est), float(est - z * se), float(est + z * se)


def _ols(x: NDArray[Any], y: NDArray[Any]) -> NDArray[Any]:
    return np.asarray(np.linalg.lstsq(x, y, rcond=None)[0], dtype=np.float64)


def _ols_stats(
    theta: NDArray[Any], data: tuple[NDArray[Any], ...], use_unlabeled: bool
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any]]:
    x, y, yh, xu, yu = data
    n, N = x.shape[0], xu.shape[0]
    h = (x.T @ x + xu.T @ xu) / (N + n) if use_unlabeled else x.T @ x / n
    grads = x * (x @ theta - y)[:, None]
    grads_hat = x * (x @ theta - yh)[:, None]
    grads_hat_u = xu * (xu @ theta - yu)[:, None] if use_unlabeled else np.zeros_like(xu)
    return grads, grads_hat, grads_hat_u, np.linalg.inv(h)


def ppi_ols_pointestimate(
    x: ArrayLike, y: ArrayLike, yhat: ArrayLike, x_unlabeled: ArrayLike, yhat_unlabeled: ArrayLike, *, lam: float | None
) -> NDArray[Any]:
    """Prediction-powered OLS coefficients (module docstring); ``lam`` None tunes it at the lambda = 1 estimate."""
    data = tuple(np.asarray(v, dtype=np.float64) for v in (x, y, yhat, x_unlabeled, yhat_unlabeled))
    xl, yl, yh, xu, yu = data
    if lam is None:
        theta1 = _ols(xu, yu) + _ols(xl, yl - yh)
        lam = _lam(*_ols_stats(theta1, data, True))
    return np.asarray(_ols(xu, lam * yu) + _ols(xl, yl - lam * yh), dtype=np.float64)


def ppi_ols_ci(
    x: ArrayLike,
    y: ArrayLike,
    yhat: ArrayLike,
    x_unlabeled: ArrayLike,
    yhat_unlabeled: ArrayLike,
    *,
    alpha: float = 0.1,
    lam: float | None = None,
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """(estimate, low, high) arrays of the prediction-powered OLS coefficients (module docstring)."""
    data = tuple(np.asarray(v, dtype=np.float64) for v in (x, y, yhat, x_unlabeled, yhat_unlabeled))
    n, N = data[0].shape[0], data[3].shape[0]
    theta = ppi_ols_pointestimate(*data, lam=lam)
    if lam is None:
        lam = _lam(*_ols_stats(theta, data, True))
        theta = ppi_ols_pointestimate(*data, lam=lam)
    grads, grads_hat, grads_hat_u, inv_h = _ols_stats(theta, data, lam != 0)
    d = theta.size
    var_u = np.cov((lam * grads_hat_u).T).reshape(d, d)
    var = np.cov((grads - lam * grads_hat).T).reshape(d, d)
    sigma = inv_h @ (n / N * var_u + var) @ inv_h
    se = np.sqrt(np.diag(sigma) / n)
    z = float(norm.ppf(1 - alpha / 2))
    return theta, theta - z * se, theta + z * se
