"""Correlation and agreement of observed scores with RSMTool semantics (docs/design.md section 4.2; RSMTool
"Evaluation Metrics").

Notation: ``y_true`` is the human score H, ``y_pred`` the system score M, N the number of responses; two
equal-length finite vectors in, a float out, NaN with an :class:`~core.metrics.notes.UndefinedMetricWarning` giving
the reason when undefined. Pearson's r and QWK finish the totals of :mod:`core.metrics.estimates.sums`, as the
pipeline and the bootstrap do. Cohen's kappa: :mod:`core.metrics.estimates.kappa`; SMD, MSE, RMSE, R2, DSM:
:mod:`core.metrics.estimates.accuracy`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from core.metrics.data import as_pair
from core.metrics.estimates.kappa import cohen_kappa as cohen_kappa  # re-exported: an observed-score metric
from core.metrics.estimates.sums import (
    as_float,
    finish_disattenuated,
    finish_pearson,
    finish_qwk,
    moments,
    pair_moment_sums,
)
from core.metrics.notes import undefined


def pair_moments(y_true: ArrayLike, y_pred: ArrayLike) -> dict[str, NDArray[Any]]:
    """The finished moments (:func:`core.metrics.estimates.sums.moments`) of one validated pair of score vectors."""
    s, shift = pair_moment_sums(*as_pair(y_true, y_pred))
    return moments(s.totals(), shift)


def pearson_r(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Pearson's correlation coefficient.

    r = sum (H - mean H)(M - mean M) / sqrt(sum (H - mean H)^2 sum (M - mean M)^2)

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
        Human and system scores, finite.

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

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)

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
