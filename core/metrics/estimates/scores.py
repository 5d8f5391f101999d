"""RSMTool's post-processing of system scores: trimming to the score range and scaling to the human scale.

Sources: RSMTool ``rsmtool.utils.metrics`` / ``rsmtool.preprocessor`` (``trim``, scaled scores) and its
documentation of the evaluation metrics (docs/design.md section 4.2).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from core.metrics.data import as_vector

#: RSMTool's default trimming tolerance (``trim_tolerance``).
TRIM_TOLERANCE = 0.4998


def trim_scores(
    values: ArrayLike, *, trim_min: float, trim_max: float, tolerance: float = TRIM_TOLERANCE
) -> NDArray[Any]:
    """Clip scores to [trim_min - tolerance, trim_max + tolerance] (RSMTool ``trim``; its default range).

    Parameters
    ----------
    values : array-like of shape (n,)
    trim_min, trim_max : float
        The score scale.
    tolerance : float, default 0.4998
        So that a trimmed score still rounds to the scale's end points.

    Returns
    -------
    ndarray of shape (n,)

    References
    ----------
    RSMTool ``rsmtool.utils.conversion`` / ``preprocessor.trim`` (``trim_min``, ``trim_max``, ``trim_tolerance``).

    Examples
    --------
    >>> trim_scores([0.2, 3.1, 7.9], trim_min=1, trim_max=6).round(4).tolist()
    [0.5002, 3.1, 6.4998]
    """
    v = as_vector(values, "values")
    return np.clip(v, trim_min - tolerance, trim_max + tolerance)


def scale_scores(values: ArrayLike, *, from_mean: float, from_sd: float, to_mean: float, to_sd: float) -> NDArray[Any]:
    """Scaled scores: (M - mean_M) / sd_M * sd_H + mean_H (RSMTool ``scale`` of raw predictions).

    RSMTool takes mean_M, sd_M of the system's predictions and mean_H, sd_H of the human scores on the training
    set; pass the statistics of the set the scaling is to follow.

    Parameters
    ----------
    values : array-like of shape (n,)
    from_mean, from_sd : float
        Mean and sd of the system's scores (training set).
    to_mean, to_sd : float
        Mean and sd of the human scores (training set).

    Returns
    -------
    ndarray of shape (n,)

    References
    ----------
    RSMTool documentation, "Score post-processing: scaled scores".

    Examples
    --------
    >>> scale_scores([1.0, 2.0, 3.0], from_mean=2.0, from_sd=1.0, to_mean=3.5, to_sd=0.5).tolist()
    [3.0, 3.5, 4.0]
    """
    if not from_sd > 0:
        raise ValueError("from_sd must be positive")
    v = as_vector(values, "values")
    return (v - from_mean) / from_sd * to_sd + to_mean
