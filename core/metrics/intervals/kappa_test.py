"""Large-sample inference of Cohen's (weighted) kappa of two raters (Fleiss, Cohen & Everitt 1969; statsmodels
``cohens_kappa``): standard error, normal interval, the test of kappa = 0 and the largest kappa the margins allow.

The point estimate is :func:`core.metrics.estimates.kappa.kappa_table` / ``kappa_from_table``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from easl_toolkit.core.metrics.data import Weights, check_option, disagreement_weights
from easl_toolkit.core.metrics.estimates.kappa import kappa_table
from easl_toolkit.core.metrics.intervals.analytic import normal_ci
from easl_toolkit.core.metrics.notes import undefined


class KappaTest(NamedTuple):
    """Cohen's kappa with its large-sample variance and the test of kappa = 0 (statsmodels ``KappaResults``)."""

    kappa: float
    se: float  # sqrt of the asymptotic variance (Fleiss, Cohen & Everitt 1969)
    low: float  # kappa -/+ z_(1-a/2) se
    high: float
    se0: float  # standard error under kappa = 0
    z: float  # kappa / se0
    p_value: float  # two-sided
    p_value_one_sided: float  # H1: kappa > 0
    kappa_max: float  # the largest kappa the margins allow (unweighted)


def kappa_test_from_table(table: ArrayLike, *, weights: Weights | None = None, confidence: float = 0.95) -> KappaTest:
    """Cohen's (weighted) kappa of a joint table with its variance, interval and test (statsmodels
    ``cohens_kappa``).

    With p_ij = O_ij / n, margins p_i+, p_+j, agreement weights w = 1 - d over category positions
    (:func:`core.metrics.data.disagreement_weights`), wbar_i. = sum_j p_+j w_ij, wbar_.j = sum_i p_i+ w_ij
    and
    pe = sum w_ij p_i+ p_+j:

        Var(kappa)  = [sum p_ij (w_ij - (wbar_i. + wbar_.j)(1 - kappa))^2 - (kappa - pe (1 - kappa))^2] / ((1 - pe)^2 n)
        Var0(kappa) = [sum p_i+ p_+j (w_ij - (wbar_i. + wbar_.j))^2 - pe^2] / ((1 - pe)^2 n)

    Parameters
    ----------
    table : array of shape (q, q)
        Joint counts (rows: rater 1, columns: rater 2).
    weights : {None, "identity", "linear", "quadratic"}
    confidence : float, default 0.95

    Returns
    -------
    KappaTest

    References
    ----------
    Fleiss, J. L., Cohen, J., & Everitt, B. S. (1969). Large sample standard errors of kappa and weighted kappa.
    Psychological Bulletin 72, 323-327. statsmodels ``stats.inter_rater.cohens_kappa``.

    Examples
    --------
    statsmodels' example table (SAS manual):

    >>> res = kappa_test_from_table([[14, 4, 0], [3, 12, 2], [0, 1, 14]])
    >>> [round(x, 6) for x in (res.kappa, res.se, res.se0)]
    [0.6997, 0.085218, 0.099993]
    """

    t = np.asarray(table, dtype=np.float64)
    q = t.shape[0]
    if t.ndim != 2 or t.shape != (q, q):
        raise ValueError("table must be a square matrix")
    n = t.sum()
    nan = float("nan")
    if not n > 0:
        undefined("kappa needs at least 1 response")
        return KappaTest(nan, nan, nan, nan, nan, nan, nan, nan, nan)
    p = t / n
    pr, pc = p.sum(axis=1), p.sum(axis=0)
    w = 1.0 - disagreement_weights(np.arange(q, dtype=np.float64), weights or "identity")
    w_row = (pc[None, :] * w).sum(axis=1)
    w_col = (pr[:, None] * w).sum(axis=0)
    pe = float((w * pr[:, None] * pc[None, :]).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = float(((w * p).sum() - pe) / (1.0 - pe))
        fac = 1.0 / ((1.0 - pe) ** 2 * n)
        var = (
            (p * (w - (w_col[None, :] + w_row[:, None]) * (1.0 - kappa)) ** 2).sum() - (kappa - pe * (1.0 - kappa)) ** 2
        ) * fac
        var0 = (((pr[:, None] * pc[None, :]) * (w - (w_col[None, :] + w_row[:, None])) ** 2).sum() - pe**2) * fac
        se, se0 = float(np.sqrt(var)), float(np.sqrt(var0))
        z = kappa / se0
        agree_exp = float((pr * pc).sum())
        kappa_max = float((np.minimum(pr, pc).sum() - agree_exp) / (1.0 - agree_exp))
    low, high = normal_ci(kappa, se, confidence)
    one = float(stats.norm.sf(z))
    return KappaTest(kappa, se, low, high, se0, float(z), 2.0 * one, one, kappa_max)


def cohen_kappa_test(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    weights: Weights | None = None,
    labels: ArrayLike | None = None,
    sample_weight: ArrayLike | None = None,
    confidence: float = 0.95,
) -> KappaTest:
    """:func:`kappa_test_from_table` of the joint table of two raters (:func:`kappa_table`: SKLL's categories, or
    scikit-learn's ``labels`` and ``sample_weight``).

    Parameters
    ----------
    y_true, y_pred, weights, labels, sample_weight
        As :func:`~core.metrics.estimates.kappa.cohen_kappa`.
    confidence : float, default 0.95

    Returns
    -------
    KappaTest

    References
    ----------
    Fleiss, Cohen & Everitt (1969); statsmodels ``cohens_kappa``.

    Examples
    --------
    >>> res = cohen_kappa_test([1, 2, 3, 1, 2, 2, 3], [1, 2, 3, 1, 2, 3, 2])
    >>> round(res.kappa, 6), round(res.p_value, 6)
    (0.5625, 0.036759)
    """
    if weights is not None:
        check_option("weights", weights, ("identity", "linear", "quadratic"))
    table, _ = kappa_table(y_true, y_pred, labels=labels, sample_weight=sample_weight)
    return kappa_test_from_table(table, weights=weights, confidence=confidence)
