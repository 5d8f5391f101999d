"""Rank association: Spearman's rho and Kendall's tau-b (docs/design.md section 4.6).

Notation as :mod:`core.metrics.estimates.observed` (``y_true``, ``y_pred``: array-likes of shape (n,)), where
Pearson's r and the other moment-based metrics live.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from easl_toolkit.core.metrics.data import as_pair
from easl_toolkit.core.metrics.notes import undefined


def _constant(x: NDArray[Any]) -> bool:
    return x.size == 0 or bool(np.all(x == x[0]))


def midranks(x: NDArray[Any]) -> NDArray[Any]:
    """1-based ranks with ties given their average rank (``scipy.stats.rankdata(method="average")``)."""
    ranks: NDArray[Any] = stats.rankdata(np.asarray(x, dtype=np.float64))
    return ranks


def spearman_rho(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Spearman's rank correlation: Pearson's r of the mid-ranks (``scipy.stats.spearmanr``; Spearman 1904).

    rho = Cov(rank H, rank M) / (sd(rank H) sd(rank M)), ties get their average rank.

    Returns
    -------
    float in [-1, 1]; NaN for n < 2 or a constant vector.

    References
    ----------
    Spearman, C. (1904). The proof and measurement of association between two things. American Journal of
    Psychology 15, 72-101. ``scipy.stats.spearmanr``.

    Examples
    --------
    >>> round(spearman_rho([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]), 12)
    0.820782681668
    """
    a, b = as_pair(y_true, y_pred)
    if a.size < 2:
        return undefined("a correlation needs at least 2 responses")
    if _constant(a) or _constant(b):
        return undefined("a correlation is undefined for constant scores")
    return float(np.clip(np.corrcoef(midranks(a), midranks(b))[0, 1], -1.0, 1.0))


def _kendall(y_true: ArrayLike, y_pred: ArrayLike, variant: str) -> float:
    a, b = as_pair(y_true, y_pred)
    if a.size < 2:
        return undefined("a correlation needs at least 2 responses", stacklevel=4)
    if _constant(a) or _constant(b):
        return undefined("a correlation is undefined for constant scores", stacklevel=4)
    return float(stats.kendalltau(a, b, variant=variant).statistic)


def kendall_tau_b(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Kendall's tau-b (Kendall 1945; ``scipy.stats.kendalltau``, variant 'b', O(N log N)).

    tau_b = (P - Q) / sqrt((P + Q + T_H) (P + Q + T_M)) with P concordant and Q discordant pairs and T_H, T_M the
    pairs tied only in H or only in M.

    Returns
    -------
    float in [-1, 1]; NaN for n < 2 or a constant vector.

    References
    ----------
    Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika 33, 239-251.
    ``scipy.stats.kendalltau`` (variant "b").

    Examples
    --------
    >>> round(kendall_tau_b([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]), 12)
    0.737864787373
    """
    return _kendall(y_true, y_pred, "b")


def _resample_midranks(x: NDArray[Any], counts: NDArray[Any]) -> NDArray[Any]:
    """Mid-ranks of every element of ``x`` within each resample given by ``counts`` (B, n): element i's rank in
    resample b is (total count of smaller values) + (total count of equal values + 1) / 2."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]]) if xs.size else np.zeros(0, np.int64)
    group_of_sorted = np.cumsum(np.r_[True, xs[1:] != xs[:-1]]) - 1 if xs.size else np.zeros(0, np.int64)
    group = np.empty(x.size, dtype=np.int64)
    group[order] = group_of_sorted
    totals = np.add.reduceat(counts[:, order], starts, axis=1) if xs.size else np.zeros((counts.shape[0], 0))
    below = np.cumsum(totals, axis=1) - totals
    ranks: NDArray[Any] = (below + (totals + 1.0) / 2.0)[:, group]
    return ranks


def spearman_rho_resampled(y_true: ArrayLike, y_pred: ArrayLike, counts: ArrayLike) -> NDArray[Any]:
    """Spearman's rho in each of B bootstrap resamples at once, from resampling counts (B, n).

    A resample draws response i ``counts[b, i]`` times; its mid-ranks and the Pearson correlation of the ranks
    are computed with those multiplicities (no per-resample sort: one argsort of each vector serves all
    resamples). Equal to :func:`spearman_rho` on the resampled vectors; NaN where a resample has fewer than 2
    responses or a constant vector.
    """
    a, b = as_pair(y_true, y_pred)
    w = np.asarray(counts, dtype=np.float64)
    ra = _resample_midranks(a, w)
    rb = _resample_midranks(b, w)
    n = w.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ma = (w * ra).sum(axis=1) / n
        mb = (w * rb).sum(axis=1) / n
        da = ra - ma[:, None]
        db = rb - mb[:, None]
        saa = (w * da * da).sum(axis=1)
        sbb = (w * db * db).sum(axis=1)
        sab = (w * da * db).sum(axis=1)
        rho = np.clip(sab / np.sqrt(saa * sbb), -1.0, 1.0)
    tol = 1e-9 * np.maximum(n, 1.0) ** 2
    return np.where((n < 2) | (saa <= tol) | (sbb <= tol), np.nan, rho)


def kendall_tau_c(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Kendall's tau-c (Stuart's tau-c), for rectangular tables: tau_c = 2 (P - Q) / (n^2 (m - 1) / m).

    P and Q are the concordant and discordant pairs and m = min(number of distinct H, number of distinct M).
    Parameters and result as :func:`kendall_tau_b`.

    References
    ----------
    Stuart, A. (1953). The estimation and comparison of strengths of association in contingency tables.
    Biometrika 40, 105-110. ``scipy.stats.kendalltau(variant="c")``.

    Examples
    --------
    >>> round(kendall_tau_c([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]), 6)
    0.746667
    """
    return _kendall(y_true, y_pred, "c")


def kendall_taus(
    y_true: ArrayLike, y_pred: ArrayLike, *, ties: tuple[NDArray[Any], NDArray[Any]] | None = None
) -> tuple[float, float]:
    """Kendall's tau-b and tau-c from one concordance count (the report's ``kendall_tau_b`` and ``kendall_tau_c``).

    P - Q = tau_b sqrt((n0 - n1)(n0 - n2)) with n0 = n(n - 1)/2 and n1, n2 the pairs tied in H and in M, so tau-c
    = 2 (P - Q) / (n^2 (m - 1) / m) needs no second pass over the pairs. Same values as :func:`kendall_tau_b` and
    :func:`kendall_tau_c`. ``ties`` gives the counts of each distinct value of both vectors when known (zeros are
    ignored), e.g. from a bootstrap resample.

    Examples
    --------
    >>> [round(t, 6) for t in kendall_taus([1, 2, 3, 4, 5], [5, 6, 7, 8, 7])]
    [0.737865, 0.746667]
    """
    a, b = as_pair(y_true, y_pred)
    tau_b = kendall_tau_b(a, b)
    if not np.isfinite(tau_b):
        return tau_b, tau_b
    n = float(a.size)
    if ties is None:
        ties = (np.unique(a, return_counts=True)[1], np.unique(b, return_counts=True)[1])
    ca, cb = (np.asarray(c, dtype=np.float64) for c in ties)
    ca, cb = ca[ca > 0], cb[cb > 0]
    n0 = n * (n - 1.0) / 2.0
    pq = tau_b * np.sqrt((n0 - (ca * (ca - 1.0)).sum() / 2.0) * (n0 - (cb * (cb - 1.0)).sum() / 2.0))
    m = float(min(ca.size, cb.size))
    return tau_b, float(np.clip(2.0 * pq / (n * n * (m - 1.0) / m), -1.0, 1.0))
