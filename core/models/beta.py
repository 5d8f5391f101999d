"""The Beta distribution's mode, mean, variance and credible interval (Sakaguchi & Van Durme 2018, eq 12-13).

Shared by EASL and bounded ranking aggregation (:mod:`core.models.easl`) and by
:mod:`core.selection`. Every function takes the Beta parameters ``alpha, beta`` (array_like of float, ``> 0``;
the mode needs ``>= 1``), broadcasts them together and returns float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray


def beta_mode(alpha: ArrayLike, beta: ArrayLike) -> NDArray[Any]:
    """Mode of Beta(alpha, beta) for ``alpha, beta >= 1`` (eq 12): ``M = (alpha - 1) / (alpha + beta - 2)``, and
    ``M(1, 1) = 0.5`` (the untouched uniform prior, as in the authors' release).

    Returns
    -------
    ndarray of float64
        The mode, in ``[0, 1]``.

    References
    ----------
    Sakaguchi & Van Durme (2018), "Efficient Online Scalar Annotation with Bounded Support", ACL, eq 12.

    Examples
    --------
    >>> float(beta_mode(1.5, 2.5)), float(beta_mode(2.5, 1.5)), float(beta_mode(1.0, 1.0))
    (0.25, 0.75, 0.5)
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    den = alpha + beta - 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        mode = (alpha - 1.0) / den
    return np.where(den > 0, mode, 0.5)


def beta_mean(alpha: ArrayLike, beta: ArrayLike) -> NDArray[Any]:
    """Mean of Beta(alpha, beta): ``alpha / (alpha + beta)``.

    Returns
    -------
    ndarray of float64
        The mean, in ``(0, 1)``.

    References
    ----------
    Sakaguchi & Van Durme (2018), footnote 9.

    Examples
    --------
    >>> round(float(beta_mean(1.8, 1.2)), 12)
    0.6
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    mean: NDArray[Any] = alpha / (alpha + np.asarray(beta, dtype=np.float64))
    return mean


def beta_variance(alpha: ArrayLike, beta: ArrayLike) -> NDArray[Any]:
    """Variance of Beta(alpha, beta) (eq 13): ``Var = alpha beta / ((alpha + beta)^2 (alpha + beta + 1))``. It
    depends on the scores, not only on the count: an item scored 0 twice (Beta(1, 3), 0.0375) has less variance
    than one scored 0.5 three times (Beta(2.5, 2.5), 0.0417).

    Returns
    -------
    ndarray of float64
        The variance, in ``(0, 1/4)``; ``1/12`` for the uniform prior.

    References
    ----------
    Sakaguchi & Van Durme (2018), eq 13.

    Examples
    --------
    >>> float(beta_variance(1.5, 1.5)), float(beta_variance(1.5, 2.5))
    (0.0625, 0.046875)
    >>> round(float(beta_variance(1.8, 1.2)), 12)  # one score of 0.8 from the uniform prior
    0.06
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    s = alpha + beta
    variance: NDArray[Any] = alpha * beta / (s * s * (s + 1.0))
    return variance


def beta_interval(alpha: ArrayLike, beta: ArrayLike, level: float = 0.95) -> tuple[NDArray[Any], NDArray[Any]]:
    """Equal-tailed credible interval of Beta(alpha, beta), ``[I^-1_{(1 - level)/2}(alpha, beta), I^-1_{(1 +
    level)/2}(alpha, beta)]``, with ``I^-1`` the inverse of the regularised incomplete Beta function
    (``scipy.special.betaincinv``), evaluated once per distinct ``(alpha, beta)`` (the export target).

    Parameters
    ----------
    level : float, default 0.95
        Coverage of the interval, in ``(0, 1)``.

    Returns
    -------
    (low, high) : tuple of ndarray of float64
        The interval ends, in ``[0, 1]``.

    References
    ----------
    Gelman et al. (2013), *Bayesian Data Analysis*, 3rd ed., section 2.3 (posterior intervals).

    Examples
    --------
    >>> lo, hi = beta_interval(1.0, 1.0)
    >>> round(float(lo), 6), round(float(hi), 6)
    (0.025, 0.975)
    """
    from scipy import special  # here, not at import: commands that load the models without it start sooner

    lo = (1.0 - level) / 2.0
    alpha, beta = np.broadcast_arrays(np.asarray(alpha, dtype=np.float64), np.asarray(beta, dtype=np.float64))
    if alpha.ndim == 0 or alpha.size < 64:
        return special.betaincinv(alpha, beta, lo), special.betaincinv(alpha, beta, 1.0 - lo)
    # the distinct (a, b) pairs: numpy.unique of one 64-bit mix of the two values' bits, a row of each pair
    # (first) and each row's pair (inverse); every row is evaluated when two different pairs share a mix
    a, b = alpha.ravel(), beta.ravel()
    key = a.view(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + b.view(np.uint64)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    distinct = np.array_equal(a[first][inverse], a) and np.array_equal(b[first][inverse], b)
    if not distinct or first.size > 0.8 * alpha.size:
        return special.betaincinv(alpha, beta, lo), special.betaincinv(alpha, beta, 1.0 - lo)
    low = special.betaincinv(a[first], b[first], lo)[inverse].reshape(alpha.shape)
    high = special.betaincinv(a[first], b[first], 1.0 - lo)[inverse].reshape(alpha.shape)
    return low, high
