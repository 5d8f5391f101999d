"""Correlation, agreement, mean differences and squared errors of observed scores with RSMTool semantics
(docs/design.md section 4.2; RSMTool "Evaluation Metrics"): r, QWK, agreement, SMD, MSE, RMSE, R2, DSM.

Notation: ``y_true`` is the human score H, ``y_pred`` the system score M (array-likes of shape (n,), finite), N the
number of responses; two equal-length vectors in, a float out, NaN with an
:class:`~core.metrics.notes.UndefinedMetricWarning` giving the reason when undefined. Pearson's r, QWK, SMD and R2
finish the totals of :mod:`core.metrics.estimates.sums`, as the pipeline and the bootstrap do. Cohen's kappa:
:mod:`core.metrics.estimates.kappa`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from easl_toolkit.core.metrics.data import SMD_METHODS, SmdMethod, as_pair, check_option
from easl_toolkit.core.metrics.estimates.kappa import (
    cohen_kappa as cohen_kappa,  # re-exported: an observed-score metric
)
from easl_toolkit.core.metrics.estimates.sums import (
    _REL_CONSTANT,
    as_float,
    finish_disattenuated,
    finish_pearson,
    finish_qwk,
    finish_r2,
    finish_smd,
    moments,
    pair_moment_sums,
)
from easl_toolkit.core.metrics.notes import undefined


def pair_moments(y_true: ArrayLike, y_pred: ArrayLike) -> dict[str, NDArray[Any]]:
    """The finished moments (:func:`core.metrics.estimates.sums.moments`) of one validated pair of score vectors."""
    s, shift = pair_moment_sums(*as_pair(y_true, y_pred))
    return moments(s.totals(), shift)


def pearson_r(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Pearson's correlation coefficient.

    r = sum (H - mean H)(M - mean M) / sqrt(sum (H - mean H)^2 sum (M - mean M)^2)

    Returns
    -------
    float in [-1, 1]; NaN for n < 2 or a constant vector (RSMTool returns None there).

    References
    ----------
    Pearson, K. (1896). RSMTool "Pearson correlation coefficient"; ``scipy.stats.pearsonr``.

    Examples
    --------
    >>> round(pearson_r([8, 4, 6, 3], [9, 4, 5, 12]), 6)
    -0.142325
    """
    return float(finish_pearson(pair_moments(y_true, y_pred)))


def quadratic_weighted_kappa(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Quadratic weighted kappa for continuous scores (RSMTool ``wtkappa``).

    QWK = 2 Cov(H, M) / (Var(H) + Var(M) + (mean M - mean H)^2), population moments (ddof=0). On integer scores it
    equals Cohen's kappa with quadratic weights.

    Returns
    -------
    float in [-1, 1]; NaN for no response or two equal constant vectors.

    References
    ----------
    Haberman, S. J. (2019). Measures of agreement versus measures of prediction accuracy. ETS RR-19-20.
    RSMTool ``quadratic_weighted_kappa``.

    Examples
    --------
    RSMTool's test vector:

    >>> round(quadratic_weighted_kappa([8, 4, 6, 3], [9, 4, 5, 12]), 12)
    -0.092105263158
    """
    return float(finish_qwk(pair_moments(y_true, y_pred)))


def agreement(y_true: ArrayLike, y_pred: ArrayLike, *, tolerance: float = 0) -> float:
    """Percent agreement: 100 (1/N) sum 1[|H_i - M_i| <= tolerance].

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
        Scores on the scale's categories (round system scores first).
    tolerance : float, default 0
        0 gives exact agreement, 1 exact plus adjacent.

    Returns
    -------
    float in [0, 100]; NaN for no response.

    References
    ----------
    RSMTool ``agreement``.

    Examples
    --------
    >>> agreement([1, 2, 3, 4], [1, 3, 3, 1], tolerance=1)
    75.0
    """
    a, b = as_pair(y_true, y_pred)
    if a.size == 0:
        return undefined("agreement needs at least 1 response")
    return float(100.0 * np.mean(np.abs(a - b) <= tolerance))


def exact_agreement(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Percent exact agreement, ``agreement(y_true, y_pred, tolerance=0)`` (parameters and result: :func:`agreement`).

    References
    ----------
    RSMTool ``exact_agr``.

    Examples
    --------
    >>> exact_agreement([1, 2, 3, 4], [1, 3, 3, 1])
    50.0
    """
    return agreement(y_true, y_pred, tolerance=0)


def adjacent_agreement(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Percent exact plus adjacent agreement, ``agreement(y_true, y_pred, tolerance=1)`` (parameters and result:
    :func:`agreement`).

    References
    ----------
    RSMTool ``adj_agr``.

    Examples
    --------
    RSMTool's test vector (a constant system score 2.54):

    >>> adjacent_agreement([1, 3, 4, 2, 3, 1, 3, 4, 2, 1], [2.54] * 10)
    50.0
    """
    return agreement(y_true, y_pred, tolerance=1)


def disattenuated_correlation(human_system_r: ArrayLike, human_human_r: ArrayLike) -> float | NDArray[Any]:
    """Disattenuated correlation r(H, M) / sqrt(r(H1, H2)), element-wise.

    Parameters
    ----------
    human_system_r, human_human_r : float or array-like

    Returns
    -------
    float or ndarray; NaN where r(H1, H2) <= 0 or either is NaN.

    References
    ----------
    Spearman, C. (1904). The proof and measurement of association between two things. RSMTool
    ``compute_disattenuated_correlations``.

    Examples
    --------
    RSMTool's test vectors:

    >>> disattenuated_correlation([0.9, 0.4, 0.6], [0.81, 0.64, 0.36]).round(12).tolist()
    [1.0, 0.5, 1.0]
    """
    return as_float(finish_disattenuated(human_system_r, human_human_r))


def degradation(human_system: dict[str, float], human_human: dict[str, float]) -> dict[str, float]:
    """Degradation: each human-system metric minus the same human-human metric (RSMTool ``degradation`` table).

    Parameters
    ----------
    human_system, human_human : dict name -> float

    Returns
    -------
    dict ``{key: human_system[key] - human_human[key]}`` for the keys both share except N (NaN propagates).

    References
    ----------
    Williamson, Xi & Breyer (2012); RSMTool ``degradation``.

    Examples
    --------
    >>> degradation({"corr": 0.7, "N": 10}, {"corr": 0.8, "N": 5})
    {'corr': -0.10000000000000009}
    """
    return {
        k: float(np.float64(human_system[k]) - np.float64(human_human[k]))
        for k in human_system
        if k in human_human and k != "N"
    }


def standardized_mean_difference(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    method: SmdMethod = "unpooled",
    ddof: int = 1,
    population_y_true_sd: float | None = None,
    population_y_pred_sd: float | None = None,
) -> float:
    """Standardized mean difference of system (or second human) and human scores.

    unpooled: SMD = (mean M - mean H) / sd(H); pooled: SMD = (mean M - mean H) / sqrt((sd(H)^2 + sd(M)^2) / 2);
    williamson: (mean M - mean H) / sqrt((sigma_H^2 + sigma_M^2) / 2) and johnson: (mean M - mean H) / sigma_H with
    the population sds sigma given (RSMTool's variants, e.g. the whole evaluation set's sds for a subgroup).
    Human-system SMD is unpooled, human-human SMD pooled (RSMTool).

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
    method : {"unpooled", "pooled", "williamson", "johnson"}, default "unpooled"
    ddof : {0, 1}, default 1
        Delta degrees of freedom of the standard deviations (1 in RSMTool reports).
    population_y_true_sd, population_y_pred_sd : float, optional
        The population sds of "williamson" (both) and "johnson" (the human one).

    Returns
    -------
    float; NaN for n < 2 or constant human scores.

    References
    ----------
    Williamson, Xi & Breyer (2012). A framework for evaluation and use of automated scoring. Educational
    Measurement: Issues and Practice 31, 2-13. RSMTool ``standardized_mean_difference``.

    Examples
    --------
    RSMTool's test vectors:

    >>> round(standardized_mean_difference([8, 4, 6, 3], [9, 4, 5, 12], method="pooled", ddof=0), 12)
    0.852324702859
    >>> round(standardized_mean_difference([8, 4, 6, 3], [9, 4, 5, 12], ddof=0), 12)
    1.171700198827
    >>> standardized_mean_difference([8, 4, 6, 3], [9, 4, 5, 12], method="johnson", population_y_true_sd=1.2)
    1.875
    """
    check_option("method", method, SMD_METHODS)
    a, b = as_pair(y_true, y_pred)
    if method in ("williamson", "johnson"):
        if population_y_true_sd is None or (method == "williamson" and population_y_pred_sd is None):
            raise ValueError(f"method {method!r} needs the population standard deviations")
        if method == "johnson" or population_y_pred_sd is None:  # None only for johnson (checked above)
            sd = float(population_y_true_sd)
        else:
            sd = float(np.sqrt((population_y_true_sd**2 + population_y_pred_sd**2) / 2.0))
        if a.size == 0:
            return undefined("SMD needs at least 1 response")
        if not sd > 0:
            return undefined("SMD is undefined when the population standard deviation is 0")
        return float((b.mean() - a.mean()) / sd)
    if ddof not in (0, 1):
        raise ValueError("ddof must be 0 or 1")
    mo = pair_moments(a, b)
    if ddof == 0:
        n = mo["n"]
        mo = dict(mo, va=mo["va"] * (n - 1) / n, vb=mo["vb"] * (n - 1) / n)  # cancels the ddof=1 scaling
    return float(finish_smd(mo, method))


def mean_squared_error(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Mean squared error MSE(H|M) = (1/N) sum (H_i - M_i)^2.

    Returns
    -------
    float >= 0; NaN for no response.

    References
    ----------
    RSMTool evaluation metrics; ``sklearn.metrics.mean_squared_error``.

    Examples
    --------
    >>> mean_squared_error([1, 2, 3], [1, 2, 5])
    1.3333333333333333
    """
    a, b = as_pair(y_true, y_pred)
    if a.size == 0:
        return undefined("MSE needs at least 1 response")
    return float(np.mean((a - b) ** 2))


def root_mean_squared_error(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Root mean squared error sqrt(MSE(H|M)) (parameters and NaN rule: :func:`mean_squared_error`).

    References
    ----------
    RSMTool evaluation metrics.

    Examples
    --------
    RSMTool's test vector (constant system score 2.54):

    >>> round(root_mean_squared_error([1, 3, 4, 2, 3, 1, 3, 4, 2, 1], [2.54] * 10), 12)
    1.122319027728
    """
    return float(np.sqrt(mean_squared_error(y_true, y_pred)))


def r2_score(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Coefficient of determination R2 = 1 - sum (H - M)^2 / sum (H - mean H)^2.

    Returns
    -------
    float <= 1; NaN for n < 2 (RSMTool returns None) and for constant human scores (scikit-learn returns 0 or 1
    there; we give the reason instead, a documented difference).

    References
    ----------
    ``sklearn.metrics.r2_score``, as RSMTool uses it.

    Examples
    --------
    >>> round(r2_score([1, 3, 4, 2, 3, 1, 3, 4, 2, 1], [2.54] * 10), 12)
    -0.015806451613
    """
    return float(finish_r2(pair_moments(y_true, y_pred)))


def difference_of_standardized_means(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    population_y_true_mean: float | None = None,
    population_y_pred_mean: float | None = None,
    population_y_true_sd: float | None = None,
    population_y_pred_sd: float | None = None,
    ddof: int = 1,
) -> float:
    """Difference of standardized means, DSM = mean_i [(M_i - mean_M) / sd_M - (H_i - mean_H) / sd_H].

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
        The scores of one subgroup.
    population_y_true_mean, population_y_pred_mean, population_y_true_sd, population_y_pred_sd : float, optional
        The means and sds of the WHOLE evaluation set when evaluating a subgroup; default: from the given vectors
        (sds with ``ddof``).
    ddof : int, default 1

    Returns
    -------
    float; NaN if either sd is ~0 or the vectors are empty.

    References
    ----------
    RSMTool ``difference_of_standardized_means``.

    Examples
    --------
    RSMTool's test vector:

    >>> round(difference_of_standardized_means([8, 4, 6, 3], [9, 4, 5, 12], population_y_true_mean=4.5,
    ...       population_y_pred_mean=5.1, population_y_true_sd=1.2, population_y_pred_sd=1.8), 12)
    0.708333333333
    """
    a, b = as_pair(y_true, y_pred)
    if a.size == 0:
        return undefined("DSM needs at least 1 response")
    mh = float(np.mean(a)) if population_y_true_mean is None else float(population_y_true_mean)
    mm = float(np.mean(b)) if population_y_pred_mean is None else float(population_y_pred_mean)
    if (population_y_true_sd is None or population_y_pred_sd is None) and a.size <= ddof:
        return undefined("DSM needs more responses than ddof to estimate standard deviations")
    sh = float(np.std(a, ddof=ddof)) if population_y_true_sd is None else float(population_y_true_sd)
    sm = float(np.std(b, ddof=ddof)) if population_y_pred_sd is None else float(population_y_pred_sd)
    if sh <= _REL_CONSTANT * max(1.0, abs(mh)) or sm <= _REL_CONSTANT * max(1.0, abs(mm)):
        return undefined("DSM is undefined when the human or system scores are constant")
    return float(np.mean((b - mm) / sm) - np.mean((a - mh) / sh))
