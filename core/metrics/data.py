"""The evaluation data model and its checks at the door.

Human ratings are one ``(n, R)`` float64 matrix ``H`` with NaN for a missing rating (any number of raters, ``c_i``
ratings of response i); system scores are ``(n,)`` float64 vectors. The :class:`Scale` is explicit: categorical
coefficients depend on the number of categories, so they are never inferred from the observed values alone
(docs/design.md section 4.1). The score policy (RSMTool's zero / non-numeric policy) is :mod:`core.metrics.prepare`.

Agreement weights over a scale's categories (Gwet 2014, section 3.4; irrCAC ``weights.py``): w_kl is 1 on the
diagonal and at most 1 elsewhere; every chance-corrected coefficient uses them. Disagreement weights d_kl = 1 - w_kl
(Cohen's weighted kappa, :func:`core.metrics.estimates.observed.cohen_kappa`) are built from them here, in one place.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: Agreement weights of the chance-corrected coefficients (Gwet 2014, section 3.4; irrCAC ``weights.py``).
Weights = Literal["identity", "linear", "quadratic", "ordinal", "radical", "ratio", "circular", "bipolar"]
#: Krippendorff's levels of measurement (Krippendorff 2011).
Level = Literal["nominal", "ordinal", "interval", "ratio"]
#: Standardized mean difference: human-system (``unpooled``, sd of H), human-human (``pooled``), or RSMTool's
#: population variants (``williamson``: pooled population sds, ``johnson``: the population sd of H).
SmdMethod = Literal["unpooled", "pooled", "williamson", "johnson"]

WEIGHTS: tuple[str, ...] = get_args(Weights)
LEVELS: tuple[str, ...] = get_args(Level)
SMD_METHODS: tuple[str, ...] = get_args(SmdMethod)


def check_option(name: str, value: object, allowed: Collection[object]) -> None:
    """Raise ``ValueError`` naming the option and the allowed values unless ``value`` is one of ``allowed``.

    Examples
    --------
    >>> check_option("weights", "linear", WEIGHTS)
    >>> check_option("weights", "lineal", ("identity", "linear"))
    Traceback (most recent call last):
    ...
    ValueError: weights must be one of 'identity', 'linear'; got 'lineal'
    """
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}; got {value!r}")


def as_vector(x: ArrayLike, name: str = "x") -> NDArray[Any]:
    """``x`` as a 1-d float64 array (ValueError if it is not 1-d or not numeric)."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def as_pair(
    y_true: ArrayLike, y_pred: ArrayLike, names: tuple[str, str] = ("y_true", "y_pred")
) -> tuple[NDArray[Any], NDArray[Any]]:
    """Two 1-d float64 arrays of equal length with no NaN or inf (ValueError otherwise)."""
    a = as_vector(y_true, names[0])
    b = as_vector(y_pred, names[1])
    if a.shape != b.shape:
        raise ValueError(f"{names[0]} and {names[1]} have different lengths ({a.size} and {b.size})")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError(f"{names[0]} and {names[1]} must be finite; drop missing pairs first")
    return a, b


def as_ratings(ratings: ArrayLike) -> NDArray[Any]:
    """A responses x raters float64 matrix (NaN = missing); a list of rater vectors is also accepted as columns.

    ``inf`` is rejected (ValueError): missing ratings are NaN.
    """
    if isinstance(ratings, (list, tuple)) and ratings and np.ndim(ratings[0]) == 1:
        arr = np.column_stack([as_vector(r, "ratings") for r in ratings])
    else:
        try:
            arr = np.asarray(ratings, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"ratings must be numeric: {exc}") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"ratings must be a responses x raters matrix, got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError("ratings contain inf; use NaN for a missing rating")
    return arr


def rating_counts(ratings: ArrayLike) -> NDArray[Any]:
    """Number of ratings of each response, ``c_i``.

    Parameters
    ----------
    ratings : array of shape (n, R), or a list of rater vectors; NaN for missing

    Returns
    -------
    ndarray of int64, shape (n,)

    References
    ----------
    RSMTool ``get_n_human_scores``.

    Examples
    --------
    RSMTool's test vector (a list of rater vectors):

    >>> nan = float("nan")
    >>> rating_counts([[1, 2, 3, 4], [1, nan, 2, nan], [nan, nan, 1, nan]]).tolist()
    [2, 1, 3, 1]
    """
    counts: NDArray[np.int64] = np.sum(~np.isnan(as_ratings(ratings)), axis=1).astype(np.int64)
    return counts


@dataclass(frozen=True)
class Scale:
    """An explicit score scale.

    Parameters
    ----------
    min, max : float
        Lowest and highest possible score.
    categories : array-like, optional
        The category values for categorical coefficients (sorted, unique). Default: the integers from ``min`` to
        ``max`` when both are integers, else none (categorical metrics then need an explicit list).

    References
    ----------
    Categorical coefficients depend on the number of categories (Gwet 2014, section 2.5), so the scale is explicit
    and never inferred from the observed values alone.

    Examples
    --------
    >>> Scale(1, 4).categories
    (1.0, 2.0, 3.0, 4.0)
    >>> Scale(0, 1, categories=(0, 0.5, 1)).to_categories([0.2, 0.3, 0.9]).tolist()
    [0.0, 0.5, 1.0]
    """

    min: float
    max: float
    categories: tuple[float, ...] = field(default=())

    def __post_init__(self) -> None:
        lo, hi = float(self.min), float(self.max)
        if not (np.isfinite(lo) and np.isfinite(hi)) or hi <= lo:
            raise ValueError(f"scale must have finite min < max, got [{self.min}, {self.max}]")
        object.__setattr__(self, "min", lo)
        object.__setattr__(self, "max", hi)
        cats = tuple(float(c) for c in self.categories)
        if not cats and lo.is_integer() and hi.is_integer() and hi - lo <= 10_000:
            cats = tuple(float(c) for c in np.arange(lo, hi + 1))
        if cats:
            arr = np.asarray(cats)
            if np.any(np.diff(arr) <= 0):
                raise ValueError("scale categories must be sorted and unique")
            if arr[0] < lo or arr[-1] > hi:
                raise ValueError("scale categories must lie within [min, max]")
        object.__setattr__(self, "categories", cats)

    @property
    def category_array(self) -> NDArray[Any]:
        """Category values as float64 (empty when the scale is continuous)."""
        return np.asarray(self.categories, dtype=np.float64)

    @property
    def is_categorical(self) -> bool:
        return len(self.categories) > 1

    def to_categories(self, x: ArrayLike) -> NDArray[Any]:
        """Round half-to-even to integers (``numpy.round``, as SKLL and RSMTool) and clip to [min, max].

        NaN stays NaN. With non-integer categories, each score goes to the nearest category (ties to the lower).
        """
        x = np.asarray(x, dtype=np.float64)
        cats = self.category_array
        if cats.size and np.all(cats == np.round(cats)) and np.all(np.diff(cats) == 1):
            return np.clip(np.round(x), cats[0], cats[-1])
        if not cats.size:
            raise ValueError("this scale has no categories; pass Scale(min, max, categories=[...])")
        idx = np.clip(np.searchsorted(cats, x), 1, cats.size - 1)
        lower, upper = cats[idx - 1], cats[idx]
        out = np.where(np.abs(x - lower) <= np.abs(upper - x), lower, upper)
        out = np.where(x <= cats[0], cats[0], np.where(x >= cats[-1], cats[-1], out))
        return np.where(np.isnan(x), np.nan, out)


def category_index(x: NDArray[Any], categories: NDArray[Any], name: str = "ratings") -> NDArray[Any]:
    """Index of each value in ``categories`` (-1 for NaN); ValueError if a value is not a category."""
    cats = np.asarray(categories, dtype=np.float64)
    if cats.ndim != 1 or cats.size < 1 or np.any(np.diff(cats) <= 0):
        raise ValueError("categories must be a sorted one-dimensional array of unique values")
    x = np.asarray(x, dtype=np.float64)
    missing = np.isnan(x)
    idx = np.searchsorted(cats, np.where(missing, cats[0], x))
    idx = np.clip(idx, 0, cats.size - 1)
    bad = ~missing & (cats[idx] != x)
    if bad.any():
        first = x[bad].ravel()[0]
        raise ValueError(
            f"{name} contain {first!r}, which is not one of the categories {cats.tolist()[:12]}"
            f"{'...' if cats.size > 12 else ''}; round the scores to the scale first"
        )
    return np.where(missing, -1, idx).astype(np.int64)


def ratings_from_distribution(counts: ArrayLike, categories: ArrayLike) -> NDArray[Any]:
    """A subjects x raters matrix from a distribution-of-raters table (irrCAC / Gwet's ``*.dist`` input form).

    ``counts[i, k]`` is the number of raters who put subject i in category k. Row i of the result holds
    ``counts[i, 0]`` times category 0, then ``counts[i, 1]`` times category 1, ..., padded with NaN. Gwet's AC,
    Brennan-Prediger, Fleiss' kappa and Krippendorff's alpha depend only on these counts, so they equal the
    distribution-form coefficients; Conger's kappa needs rater identities and is not defined for this input.

    Parameters
    ----------
    counts : array of shape (n_subjects, q)
        Non-negative integers.
    categories : array-like of shape (q,)

    Returns
    -------
    ndarray of shape (n_subjects, max_i sum_k counts[i, k])

    References
    ----------
    Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed., section 2.4; irrCAC ``distrib_6raters``.

    Examples
    --------
    >>> ratings_from_distribution([[2, 1], [0, 3]], [1, 2]).tolist()
    [[1.0, 1.0, 2.0], [2.0, 2.0, 2.0]]
    """
    c = np.asarray(counts)
    cats = np.asarray(categories, dtype=np.float64)
    if c.ndim != 2 or c.shape[1] != cats.size:
        raise ValueError(f"counts must be subjects x {cats.size} categories, got shape {c.shape}")
    if (c < 0).any() or not np.array_equal(c, np.round(c)):
        raise ValueError("counts must be non-negative integers")
    c = c.astype(np.int64)
    width = int(c.sum(axis=1).max()) if c.size else 0
    out = np.full((c.shape[0], max(width, 1)), np.nan)
    for i, row in enumerate(c):
        out[i, : row.sum()] = np.repeat(cats, row)
    return out


def round_to_categories(x: NDArray[Any], cats: NDArray[Any]) -> NDArray[Any]:
    """Round half-to-even and clip to the categories (integer scale), else the nearest category.

    Examples
    --------
    >>> round_to_categories(np.array([0.2, 2.5, 3.5, 9.0]), np.arange(1.0, 6.0)).tolist()
    [1.0, 2.0, 4.0, 5.0]
    """
    return Scale(cats[0], cats[-1], tuple(cats)).to_categories(x)


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
