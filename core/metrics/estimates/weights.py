"""Agreement and disagreement weights over a scale's categories (Gwet 2014, section 3.4; irrCAC ``weights.py``).

Agreement weights w_kl are 1 on the diagonal and at most 1 elsewhere; every chance-corrected coefficient of
:mod:`core.metrics.estimates.agreement` uses them. Disagreement weights d_kl = 1 - w_kl (Cohen's weighted kappa,
:func:`core.metrics.estimates.observed.cohen_kappa`) are built from them here, in one place.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from core.metrics.data import WEIGHTS, Weights, check_option

_DISTANCE_WEIGHTS = ("identity", "linear", "quadratic")


def agreement_weights(categories: ArrayLike, weights: Weights = "identity") -> NDArray[Any]:
    """Agreement weights w_kl over the category values c_1 < ... < c_q (1 on the diagonal).

    With R = c_q - c_1 and k, l the category ranks (irrCAC ``weights.py``; Gwet 2014, section 3.4):

    - identity   1[k = l]
    - linear     1 - |c_k - c_l| / R
    - quadratic  1 - (c_k - c_l)^2 / R^2
    - radical    1 - sqrt|c_k - c_l| / sqrt R
    - ordinal    1 - m_kl / max m,  m_kl = (|k - l| + 1) |k - l| / 2
    - ratio      1 - ((c_k - c_l) / (c_k + c_l))^2 / ((c_q - c_1) / (c_q + c_1))^2
    - circular   1 - s_kl / max s,  s_kl = sin^2(pi (c_k - c_l) / (R + 1))
    - bipolar    1 - b_kl / max b,  b_kl = (c_k - c_l)^2 / ((c_k + c_l - 2 c_1)(2 c_q - c_k - c_l)), b_kk = 0

    Parameters
    ----------
    categories : array-like of shape (q,)
        The scale's category values, sorted.
    weights : {"identity", "linear", "quadratic", "ordinal", "radical", "ratio", "circular", "bipolar"}

    Returns
    -------
    ndarray of shape (q, q)

    References
    ----------
    Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed., section 3.4.

    Examples
    --------
    >>> agreement_weights([1, 2, 3], "quadratic").tolist()
    [[1.0, 0.75, 0.0], [0.75, 1.0, 0.75], [0.0, 0.75, 1.0]]
    >>> agreement_weights([1, 2, 3, 4], "ordinal")[0].tolist()
    [1.0, 0.8333333333333334, 0.5, 0.0]
    """
    check_option("weights", weights, WEIGHTS)
    c = np.asarray(categories, dtype=np.float64)
    q = c.size
    if weights == "identity":
        return np.eye(q)
    if q < 2:
        return np.ones((q, q))
    diff: NDArray[np.float64] = c[:, None] - c[None, :]
    span: np.float64 = c[-1] - c[0]
    if weights == "linear":
        return 1.0 - np.abs(diff) / span
    if weights == "quadratic":
        return 1.0 - (diff / span) ** 2
    if weights == "radical":
        radical: NDArray[np.float64] = 1.0 - np.sqrt(np.abs(diff)) / np.sqrt(span)
        return radical
    if weights == "ratio":
        if (c == 0).any():
            raise ValueError("ratio weights need categories other than 0")
        ratio: NDArray[np.float64] = 1.0 - (diff / (c[:, None] + c[None, :])) ** 2 / (span / (c[-1] + c[0])) ** 2
        return ratio
    if weights == "ordinal":
        k = np.arange(q)
        m = np.abs(k[:, None] - k[None, :]) + 1.0
        d: NDArray[np.float64] = m * (m - 1.0) / 2.0
    elif weights == "circular":
        d = np.sin(np.pi * diff / (span + 1.0)) ** 2
    else:  # bipolar
        with np.errstate(divide="ignore", invalid="ignore"):
            d = diff**2 / ((c[:, None] + c[None, :] - 2.0 * c[0]) * (2.0 * c[-1] - c[:, None] - c[None, :]))
        d[np.eye(q, dtype=bool)] = 0.0
    scaled: NDArray[np.float64] = 1.0 - d / d.max()
    return scaled


def disagreement_weights(
    categories: ArrayLike, weights: Weights = "identity", *, off_by_one: bool = False
) -> NDArray[Any]:
    """Disagreement weights d_kl = 1 - w_kl (:func:`agreement_weights`), 0 on the diagonal, at most 1.

    Cohen's weighted kappa, 1 - sum d O / sum d E, does not change when d is scaled, so these weights give SKLL's
    and scikit-learn's kappa (which use |k - l| and (k - l)^2). ``off_by_one`` (SKLL ``allow_off_by_one``, identity,
    linear and quadratic only) shortens every distance by one category step before weighting, so adjacent
    categories count as agreement.

    Examples
    --------
    >>> disagreement_weights([1, 2, 3], "linear").tolist()
    [[0.0, 0.5, 1.0], [0.5, 0.0, 0.5], [1.0, 0.5, 0.0]]
    >>> disagreement_weights([1, 2, 3], "identity", off_by_one=True).tolist()
    [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    """
    if not off_by_one:
        return 1.0 - agreement_weights(categories, weights)
    check_option("weights", weights, _DISTANCE_WEIGHTS)
    c = np.asarray(categories, dtype=np.float64)
    step = np.diff(c).min() if c.size > 1 else 1.0
    dist = np.maximum(np.abs(c[:, None] - c[None, :]) - step, 0.0)
    if weights == "identity":
        return (dist > 0).astype(np.float64)
    span = max(c[-1] - c[0], step) if c.size else 1.0
    return dist / span if weights == "linear" else (dist / span) ** 2
