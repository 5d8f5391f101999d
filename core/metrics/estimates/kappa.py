"""Cohen's (weighted) kappa of two raters: SKLL semantics, scikit-learn's ``labels`` and ``sample_weight``.

kappa = 1 - sum d O / sum d E over the joint table O and the chance table E (Cohen 1960, 1968), with the
disagreement weights of :mod:`core.metrics.data`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from easl_toolkit.core.metrics.data import Weights, as_pair, as_vector, check_option, disagreement_weights
from easl_toolkit.core.metrics.estimates.sums import nan_where
from easl_toolkit.core.metrics.notes import undefined


def kappa_from_table(
    table: NDArray[Any], cats: NDArray[Any], weights: Weights | None = None, allow_off_by_one: bool = False
) -> NDArray[Any]:
    """Cohen's kappa from joint counts ``table[..., k, l]`` (human k, system l) over category values ``cats``.

    kappa = 1 - sum d_kl O_kl / sum d_kl E_kl, E_kl = n_k+ n_+l / N, with the disagreement weights d of
    :func:`core.metrics.data.disagreement_weights` (SKLL ``kappa``). If only one category is used by both
    raters, or every weight is zero, SKLL returns 1.0, and so do we. Batch-capable.
    """
    table = np.asarray(table, dtype=np.float64)
    w = disagreement_weights(np.asarray(cats, dtype=np.float64), weights or "identity", off_by_one=allow_off_by_one)
    n = table.sum(axis=(-2, -1))
    rows = table.sum(axis=-1)
    cols = table.sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = rows[..., :, None] * cols[..., None, :] / n[..., None, None]
        num = (w * table).sum(axis=(-2, -1))
        den = (w * expected).sum(axis=(-2, -1))
        k = 1.0 - num / den
    used = ((rows + cols) > 0).sum(axis=-1)
    if not np.count_nonzero(w):  # SKLL: all disagreement weights zero gives 1.0
        used = np.zeros_like(used)
    k = np.where(used <= 1, 1.0, k)  # SKLL: a single label gives 1.0
    k = nan_where(n <= 0, k, "kappa needs at least 1 response")
    return nan_where((n > 0) & (used > 1) & (den <= 0), k, "kappa is undefined: no expected disagreement")


def kappa_table(
    y_true: ArrayLike, y_pred: ArrayLike, *, labels: ArrayLike | None = None, sample_weight: ArrayLike | None = None
) -> tuple[NDArray[Any], NDArray[Any]]:
    """The joint table of :func:`cohen_kappa` and the category positions its weights use.

    Without ``labels``: scores rounded half-to-even, categories every integer from the smallest to the largest
    score of either vector (SKLL). With ``labels``: the given labels in order, weights by their position, and
    pairs with a score outside ``labels`` left out (scikit-learn ``cohen_kappa_score``).
    """
    a, b = as_pair(y_true, y_pred)
    wts = np.ones(a.size) if sample_weight is None else as_vector(sample_weight, "sample_weight")
    if wts.shape != a.shape:
        raise ValueError(f"sample_weight has {wts.size} values for {a.size} pairs")
    if labels is None:
        a, b = np.round(a), np.round(b)
        lo, hi = (min(a.min(), b.min()), max(a.max(), b.max())) if a.size else (0.0, 0.0)
        q = int(hi - lo) + 1
        ia, ib = (a - lo).astype(np.int64), (b - lo).astype(np.int64)
    else:
        lab = as_vector(labels, "labels")
        if lab.size == 0 or np.unique(lab).size != lab.size:
            raise ValueError("labels must be a non-empty list of distinct values")
        q = lab.size
        order = np.argsort(lab)
        pos_a = np.searchsorted(lab[order], a).clip(0, q - 1)
        pos_b = np.searchsorted(lab[order], b).clip(0, q - 1)
        ok = (lab[order][pos_a] == a) & (lab[order][pos_b] == b)
        ia, ib, wts = order[pos_a[ok]], order[pos_b[ok]], wts[ok]
    table = np.bincount(ia * q + ib, weights=wts, minlength=q * q).reshape(q, q)
    return table, np.arange(q, dtype=np.float64)


def cohen_kappa(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    weights: Weights | None = None,
    labels: ArrayLike | None = None,
    sample_weight: ArrayLike | None = None,
    allow_off_by_one: bool = False,
) -> float:
    """Cohen's (weighted) kappa of two raters.

    .. math::

        \\kappa = 1 - \\frac{\\sum_{kl} d_{kl} O_{kl}}{\\sum_{kl} d_{kl} E_{kl}}, \\quad E_{kl} = n_{k+} n_{+l} / N

    with observed counts O, chance counts E and disagreement weights d_kl = 1[k != l] (unweighted), |k - l|
    (linear) or (k - l)^2 (quadratic) over category positions
    (:func:`core.metrics.data.disagreement_weights`).

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
    weights : {None, "identity", "linear", "quadratic"}, default None
        None and "identity" are the unweighted kappa.
    labels : array-like, optional
        The categories, in order (scikit-learn): pairs with another score are left out, weights use the labels'
        positions. Default: SKLL's rule, scores rounded half-to-even and every integer from the smallest to the
        largest score of either vector.
    sample_weight : array-like of shape (n,), optional
        Weight of each pair in the joint table (scikit-learn).
    allow_off_by_one : bool, default False
        Adjacent categories count as agreement (SKLL).

    Returns
    -------
    float
        1 for perfect agreement, 0 for chance agreement. A single category used by both gives 1.0 (SKLL; scikit-
        learn returns NaN there); NaN for no pair.

    References
    ----------
    Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and Psychological Measurement
    20, 37-46. Cohen, J. (1968). Weighted kappa. Psychological Bulletin 70, 213-220. SKLL ``metrics.kappa``;
    scikit-learn ``cohen_kappa_score``.

    Examples
    --------
    SKLL's test vectors:

    >>> cohen_kappa([1, 2, 3, 1, 2, 2, 3], [1, 2, 3, 1, 2, 3, 2])
    0.5625
    >>> round(cohen_kappa([1, 2, 3, 1, 2, 2, 3], [1, 2, 3, 1, 2, 3, 2], weights="quadratic"), 6)
    0.75
    """
    if weights is not None:
        check_option("weights", weights, ("identity", "linear", "quadratic"))
    table, cats = kappa_table(y_true, y_pred, labels=labels, sample_weight=sample_weight)
    if not table.sum() > 0:
        return undefined("kappa needs at least 1 response")
    return float(kappa_from_table(table, cats, weights, allow_off_by_one))
