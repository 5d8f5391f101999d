"""Krippendorff's alpha for any number of raters with missing data: nominal, ordinal, interval and ratio.

Source: Krippendorff, K. (2011), "Computing Krippendorff's Alpha-Reliability", and Krippendorff (2004),
*Content Analysis*, ch. 11; docs/design.md section 4.5. With m_u pairable values in unit u (m_u >= 2), n.. = sum m_u
pairable values, n_c of them equal to c, and the coincidence matrix o_ck = sum_u sum_{j != j'} 1[(v_uj, v_uj') =
(c, k)] / (m_u - 1):

    alpha = 1 - D_o / D_e = 1 - (n.. - 1) sum_ck o_ck delta_ck / sum_ck n_c n_k delta_ck

with delta_ck = 1[c != k] (nominal), (c - k)^2 (interval), ((c - k) / (c + k))^2 (ratio) and
(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2 (ordinal).

No value x value tensor is built for interval or ordinal data. For interval,
sum_{j != j'} (v_j - v_j')^2 = 2 m_u SS_u and sum_ck n_c n_k (c - k)^2 = 2 n.. SS, so

    alpha_interval = 1 - (n.. - 1) sum_u [m_u SS_u / (m_u - 1)] / (n.. SS)

with SS_u the within-unit and SS the overall sum of squares of pairable values: O(N x raters) time and memory.
Ordinal distances are squared differences of mid-ranks M_c = sum_{g<c} n_g + n_c / 2 (since sum_{g=c..k} n_g -
(n_c + n_k)/2 = M_k - M_c), so ordinal alpha is interval alpha on the mid-ranks of the pairable values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from easl_toolkit.core.metrics.data import LEVELS, Level, as_ratings, category_index, check_option
from easl_toolkit.core.metrics.estimates.agreement_totals import agreement_totals
from easl_toolkit.core.metrics.estimates.sums import nan_where
from easl_toolkit.core.metrics.notes import undefined

_RATIO_MAX_DISTINCT = 20_000


def finish_alpha_from_coincidence(coinc: NDArray[Any], delta: NDArray[Any] | str) -> NDArray[Any]:
    """alpha = 1 - (n.. - 1) sum o delta / sum n_c n_k delta from a coincidence matrix (batch-capable).

    ``delta`` is a (q, q) distance matrix, or ``"ordinal"`` (distances from the marginals, needs nothing else).
    """
    coinc = np.asarray(coinc, dtype=np.float64)
    nc = coinc.sum(axis=-1)
    n = nc.sum(axis=-1)
    if isinstance(delta, str):
        if delta != "ordinal":
            raise ValueError("delta must be a matrix or 'ordinal'")
        mid = np.cumsum(nc, axis=-1) - nc / 2.0
        delta = (mid[..., :, None] - mid[..., None, :]) ** 2
    do = (coinc * delta).sum(axis=(-2, -1))
    de = np.einsum("...k,...kl,...l->...", nc, np.broadcast_to(delta, coinc.shape), nc)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (n - 1.0) * do / de
    alpha = nan_where(n < 2, alpha, "Krippendorff's alpha needs at least one unit with two values")
    return nan_where((n >= 2) & ~(de > 0), alpha, "Krippendorff's alpha is undefined: every pairable value is the same")


def coincidence_delta(cats: NDArray[Any], level: str) -> NDArray[Any] | str:
    """Distance matrix delta_ck over category values for a level (``"ordinal"`` is resolved from the marginals)."""
    c = np.asarray(cats, dtype=np.float64)
    if level == "nominal":
        return 1.0 - np.eye(c.size)
    if level == "interval":
        return (c[:, None] - c[None, :]) ** 2
    if level == "ratio":
        s = c[:, None] + c[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(s == 0, 0.0, ((c[:, None] - c[None, :]) / s) ** 2)
    check_option("level", level, LEVELS)
    return "ordinal"


def _interval(h: NDArray[Any], obs: NDArray[Any], m: NDArray[Any]) -> float:
    vals = h[obs]
    n: int = vals.size
    if n < 2:
        return undefined("Krippendorff's alpha needs at least one unit with two values")
    mean = vals.mean()
    ss = float(((vals - mean) ** 2).sum())
    if ss <= 0:
        return undefined("Krippendorff's alpha is undefined: every pairable value is the same")
    total = np.where(obs, h, 0.0).sum(axis=1)
    unit_mean = total / m
    ss_u = np.where(obs, (h - unit_mean[:, None]) ** 2, 0.0).sum(axis=1)
    do = float((m * ss_u / (m - 1.0)).sum())
    return 1.0 - (n - 1.0) * do / (n * ss)


def krippendorff_alpha(ratings: ArrayLike, *, level: Level = "interval", categories: ArrayLike | None = None) -> float:
    """Krippendorff's alpha of a units x coders matrix (NaN = missing) at a level of measurement.

    .. math::

        \\alpha = 1 - D_o / D_e
        = 1 - (n_{..} - 1) \\sum_{ck} o_{ck} \\delta_{ck} / \\sum_{ck} n_c n_k \\delta_{ck}

    (formulas and the distances delta of each level in the module docstring). Units with fewer than two values are
    not pairable and are ignored. Interval and ordinal use O(N x coders) memory on continuous values; nominal uses
    the distinct values as categories; ratio needs non-negative values and at most 20,000 distinct values (NaN with
    a reason beyond). Categories that nobody used do not change alpha at any level.

    Parameters
    ----------
    ratings : array of shape (n_units, n_coders)
        Values, NaN for missing.
    level : {"nominal", "ordinal", "interval", "ratio"}, default "interval"
    categories : array-like, optional
        The scale's category values (krippendorff's ``value_domain``). When given, every value must be one of them
        (ValueError otherwise) and alpha is computed from the q x q coincidence matrix.

    Returns
    -------
    float <= 1; NaN when no unit has two values or every pairable value is the same.

    References
    ----------
    Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School for Communication,
    University of Pennsylvania. Krippendorff, K. (2004). Content Analysis, 2nd ed., ch. 11.

    Examples
    --------
    Krippendorff's (2011) example, 3 coders x 15 units:

    >>> import numpy as np
    >>> nan = np.nan
    >>> data = np.array([[nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
    ...                  [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
    ...                  [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4]]).T
    >>> [round(krippendorff_alpha(data, level=lv), 6) for lv in ("nominal", "ordinal", "interval", "ratio")]
    [0.691358, 0.806721, 0.810845, 0.808944]
    """
    check_option("level", level, LEVELS)
    if categories is not None:
        cats = np.asarray(categories, dtype=np.float64)
        h = as_ratings(ratings)
        coinc = agreement_totals(category_index(h, cats), cats.size)["coinc"].reshape(cats.size, cats.size)
        return float(finish_alpha_from_coincidence(coinc, coincidence_delta(cats, level)))
    h = as_ratings(ratings)
    h = h[(~np.isnan(h)).sum(axis=1) >= 2]  # the pairable units
    obs = ~np.isnan(h)
    m = obs.sum(axis=1).astype(np.float64)
    if level == "interval":
        return _interval(h, obs, m)
    if level == "ordinal":
        ranks = np.full(h.shape, np.nan)
        ranks[obs] = stats.rankdata(h[obs])
        return _interval(ranks, obs, m)
    return _over_values(h, obs, m, level)


def _over_values(h: NDArray[Any], obs: NDArray[Any], m: NDArray[Any], level: Level) -> float:
    """Nominal or ratio alpha over the distinct pairable values (the values are the categories)."""
    vals = h[obs]
    if vals.size < 2:
        return undefined("Krippendorff's alpha needs at least one unit with two values")
    uniq, inv = np.unique(vals, return_inverse=True)
    idx = np.full(h.shape, -1, dtype=np.int64)
    idx[obs] = inv
    nc = np.bincount(inv, minlength=uniq.size).astype(np.float64)
    n = float(vals.size)
    R = h.shape[1]
    if level == "ratio":
        if (uniq < 0).any():
            raise ValueError("ratio alpha needs non-negative values")
        if uniq.size > _RATIO_MAX_DISTINCT:
            return undefined(f"ratio alpha is computed for at most {_RATIO_MAX_DISTINCT} distinct values")

        def dist(a: NDArray[Any], b: NDArray[Any]) -> NDArray[Any]:
            s = uniq[a] + uniq[b]
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(s == 0, 0.0, ((uniq[a] - uniq[b]) / s) ** 2)

        de = 0.0
        step = max(1, 4_000_000 // max(uniq.size, 1))
        for start in range(0, uniq.size, step):
            block = np.arange(start, min(start + step, uniq.size))
            d = dist(block[:, None], np.arange(uniq.size)[None, :])
            de += float(nc[block] @ d @ nc)
    else:

        def dist(a: NDArray[Any], b: NDArray[Any]) -> NDArray[Any]:
            unequal: NDArray[np.float64] = (a != b).astype(np.float64)
            return unequal

        de = n * n - float((nc * nc).sum())
    do = 0.0
    for j in range(R):
        for k in range(R):
            if j != k:
                ok = obs[:, j] & obs[:, k]
                do += float((dist(idx[ok, j], idx[ok, k]) / (m[ok] - 1.0)).sum())
    if de <= 0:
        return undefined("Krippendorff's alpha is undefined: every pairable value is the same")
    return 1.0 - (n - 1.0) * do / de
