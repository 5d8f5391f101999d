"""Fairness analyses of Loukina, Madnani & Zechner (2019), as implemented by RSMTool (``get_fairness_analyses``).

With error = M - H (signed, as RSMTool's code does; its docs say "absolute") and SE = error^2, three OLS models
with the subgroup as a categorical predictor (treatment coding, the largest group as the base level, ties broken
by sorting the names):

- overall score accuracy (OSA): adjusted R2 of ``SE ~ group``;
- overall score difference (OSD): adjusted R2 of ``error ~ group``;
- conditional score difference (CSD): adjR2(``error ~ group + C(H)``) - adjR2(``error ~ C(H)``), the human score
  as a category (base level: the most frequent score, ties broken by the lower score; RSMTool
  ``convert_to_ordered_category``).

p-values: the F-test of each model against the intercept-only model (OSA, OSD), and the nested F-test of adding
the group to ``error ~ C(H)`` (CSD). The OLS pieces (treatment-coded dummies, the fit with an intercept, the
coefficients' inference as statsmodels ``OLS.fit``, the nested F-test, one figure's record) are here too, shared with
:mod:`core.distributed.fairness_cells`: R2 = 1 - RSS / TSS, adjR2 = 1 - (1 - R2) (n - 1) / (n - p - 1) with p the
rank of the design without the intercept, and the F-test of a model against a nested one
F = ((RSS_small - RSS_big) / (p_big - p_small)) / (RSS_big / (n - p_big - 1)). The same analyses on many bootstrap
resamples at once: :mod:`core.metrics.estimates.fairness_resampled`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from easl_toolkit.core.metrics.data import as_pair
from easl_toolkit.core.metrics.notes import undefined


def fairness_analysis(
    y_true: ArrayLike, y_pred: ArrayLike, groups: ArrayLike, *, base_group: str | None = None
) -> dict[str, Any]:
    """Overall score accuracy, overall score difference and conditional score difference (RSMTool semantics).

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
        Human and system scores.
    groups : array-like of shape (n,)
        Subgroup labels (any hashable values).
    base_group : str, optional
        The reference level of the group coefficients (RSMTool's ``base_group``); default the largest group. The
        adjusted R2 values and their p-values do not depend on it.

    Returns
    -------
    dict with ``base_group``, ``groups`` (sizes) and for each of ``osa``, ``osd``, ``csd``: ``value`` (adjusted R2;
    for CSD the difference of adjusted R2), ``p_value``, ``r2``, and ``estimates`` (intercept = base group, then one
    coefficient per other group), with their OLS two-sided p-values (``estimates_p_value``) and 95% t-intervals
    (``estimates_ci``; statsmodels, as RSMTool's estimate tables). NaN with a reason when there is only one group
    or too few responses.

    References
    ----------
    Loukina, A., Madnani, N., & Zechner, K. (2019). The many dimensions of algorithmic fairness in educational
    applications. BEA workshop. RSMTool ``get_fairness_analyses``.

    Examples
    --------
    RSMTool's test vector (the base group is the largest; E on a tie):

    >>> fa = fairness_analysis([2, 3, 2, 3], [1, 1.5, 3, 3.5], ["K", "K", "E", "E"])
    >>> fa["base_group"], {k: round(v, 9) for k, v in fa["osd"]["estimates"].items()}
    ('E', {'Intercept': 0.75, 'K': -2.0})
    """
    h, m = as_pair(y_true, y_pred)
    names, codes = group_codes(groups, h.size)
    error = m - h
    unit = float(max(np.abs(h).max(), np.abs(m).max())) if h.size else 0.0
    data = {"e": (error, tss_floor(h.size, unit)), "s": (error**2, tss_floor(h.size, unit**2))}
    return fairness_record(names, codes, h, None, base_group, lambda y, x: ols(data[y][0], x, data[y][1]))


def fairness_record(
    names: NDArray[Any],
    codes: NDArray[Any],
    scores: NDArray[Any],
    weights: NDArray[Any] | None,
    base_group: str | None,
    fit: Callable[[str, NDArray[Any]], dict[str, Any]],
) -> dict[str, Any]:
    """The record of :func:`fairness_analysis` from rows with a subgroup (``names[codes]``), a human score and a
    weight (responses: none; the merged cells of :mod:`core.distributed.fairness_cells`: their counts), and
    ``fit(y, X)``: the OLS record (:func:`ols`) of the error (``y = "e"``) or
    the squared error (``"s"``) on the design ``X`` (the intercept added)."""
    sizes = np.bincount(codes, weights=weights, minlength=names.size)
    base = int(np.argmax(sizes)) if sizes.size else 0  # largest; ties: first in sorted order
    if base_group is not None:
        if str(base_group) not in set(names.tolist()):
            raise ValueError(f"base_group {base_group!r} is not one of the groups {names.tolist()[:12]}")
        base = int(np.flatnonzero(names == str(base_group))[0])
    out: dict[str, Any] = {
        "base_group": str(names[base]) if names.size else None,
        "groups": {str(k): int(v) for k, v in zip(names, sizes)},
    }
    if names.size < 2 or sizes.sum() < 3:
        reason = undefined("fairness analyses need at least two subgroups and three responses")
        for key in FAIRNESS_KEYS:
            out[key] = {"value": reason, "p_value": reason, "r2": reason}
            out[key].update(estimates={}, estimates_p_value={}, estimates_ci={})
        return out
    xg = dummies(codes, names.size, base)
    others = [str(names[j]) for j in range(names.size) if j != base]
    hn, hcodes = np.unique(scores, return_inverse=True)
    h_base = int(np.argmax(np.bincount(hcodes, weights=weights, minlength=hn.size)))  # most frequent; ties: lowest
    xh = dummies(hcodes, hn.size, h_base)
    none = np.zeros((codes.size, 0))
    osa, osd = fit("s", xg), fit("e", xg)
    full, base_h = fit("e", np.column_stack([xg, xh])), fit("e", xh)
    out["osa"] = figure_record(osa, osa["adj_r2"], f_test(fit("s", none), osa), others)
    out["osd"] = figure_record(osd, osd["adj_r2"], f_test(fit("e", none), osd), others)
    out["csd"] = figure_record(full, full["adj_r2"] - base_h["adj_r2"], f_test(base_h, full), others)
    for key in FAIRNESS_KEYS:
        if not np.isfinite(out[key]["value"]):
            out[key]["value"] = undefined(
                f"fairness {key.upper()} is undefined: no variance in the errors or too few responses for the model"
            )
    return out


FAIRNESS_KEYS = ("osa", "osd", "csd")


def dummies(codes: NDArray[Any], k: int, base: int) -> NDArray[Any]:
    """Treatment-coded dummies, shape (n, k - 1), of a predictor with ``k`` levels (``codes``: each response's level
    in 0..k-1): column j is 1[code = j] for every level j but the reference level ``base``.

    Examples
    --------
    >>> dummies(np.array([0, 1, 2, 1]), 3, 1).tolist()
    [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    """
    cols = [j for j in range(k) if j != base]
    return (codes[:, None] == np.asarray(cols)[None, :]).astype(np.float64) if cols else np.zeros((codes.size, 0))


def ols(y: NDArray[Any], x: NDArray[Any], tss_floor: float = 0.0) -> dict[str, Any]:
    """OLS of ``y`` (n,) on the predictors ``x`` (n, k) and an intercept (``numpy.linalg.lstsq``): R2 = 1 - RSS / TSS
    (NaN when TSS <= ``tss_floor``: y constant up to rounding) and adjR2 = 1 - (1 - R2) (n - 1) / (n - p - 1) (NaN
    when n - p - 1 <= 0), p the rank of the design without the intercept.

    Returns ``coef`` (intercept first), ``rss``, ``tss``, ``p``, ``n``, ``r2``, ``adj_r2``, ``design`` (with the
    intercept column) and ``rank``.
    """
    n = y.size
    design = np.column_stack([np.ones(n), x])
    coef, _, rank, _ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    rss = float(np.einsum("i,i->", resid, resid))
    return ols_record(coef, rss, float(((y - y.mean()) ** 2).sum()), n, int(rank), design, tss_floor)


def ols_record(
    coef: NDArray[Any], rss: float, tss: float, n: float, rank: int, design: NDArray[Any], tss_floor: float
) -> dict[str, Any]:
    """The record of :func:`ols` from a fit's RSS and TSS (R2 NaN when TSS <= ``tss_floor``)."""
    p = rank - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = 1.0 - rss / tss if tss > tss_floor else np.nan
        adj = 1.0 - (1.0 - r2) * (n - 1) / (n - p - 1) if n - p - 1 > 0 else np.nan
    return {
        "coef": coef,
        "rss": rss,
        "tss": tss,
        "p": p,
        "n": n,
        "r2": r2,
        "adj_r2": adj,
        "design": design,
        "rank": rank,
    }


def figure_record(model: dict[str, Any], value: float, p_value: float, others: list[str]) -> dict[str, Any]:
    """One fairness figure: its value, p-value and R2, and the intercept's and each non-base group's coefficient
    with its p-value and interval (the rows of RSMTool's fairness tables)."""
    labels = ["Intercept", *others]
    k = len(labels)
    _, coef_p, ci = coef_inference(model)
    return {
        "value": float(value),
        "p_value": float(p_value),
        "r2": float(model["r2"]),
        "estimates": {nm: float(v) for nm, v in zip(labels, model["coef"][:k])},
        "estimates_p_value": {nm: float(v) for nm, v in zip(labels, coef_p[:k])},
        "estimates_ci": {nm: [float(lo), float(hi)] for nm, (lo, hi) in zip(labels, ci[:k])},
    }


def coef_inference(model: dict[str, Any], confidence: float = 0.95) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """OLS standard errors, two-sided p-values and t-intervals of the coefficients (statsmodels ``OLS.fit``:
    cov = s^2 (X'X)^+, s^2 = RSS / (n - rank), t with n - rank degrees of freedom)."""
    x = model["design"]
    df = model["n"] - model["rank"]
    nan = np.full(x.shape[1], np.nan)
    if df <= 0:
        return nan, nan, np.column_stack([nan, nan])
    cov = model["rss"] / df * np.linalg.pinv(x.T @ x)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = model["coef"] / se
    p = 2.0 * stats.t.sf(np.abs(t), df)
    half = stats.t.ppf(0.5 + confidence / 2.0, df) * se
    return se, p, np.column_stack([model["coef"] - half, model["coef"] + half])


def f_test(small: dict[str, Any], big: dict[str, Any]) -> float:
    """p-value of the F-test of ``big`` against the nested ``small`` model (both from :func:`ols`).

    F = ((RSS_small - RSS_big) / (p_big - p_small)) / (RSS_big / (n - p_big - 1)), upper tail of F(p_big -
    p_small, n - p_big - 1). NaN when either degree of freedom is not positive or y is constant; 0 for a perfect
    fit of ``big`` that ``small`` lacks.
    """
    df_num = big["p"] - small["p"]
    df_den = big["n"] - big["p"] - 1
    if df_num <= 0 or df_den <= 0 or not np.isfinite(big["r2"]):  # constant y: no test
        return float("nan")
    if big["rss"] <= 0:
        return 0.0 if small["rss"] > 0 else float("nan")
    f = ((small["rss"] - big["rss"]) / df_num) / (big["rss"] / df_den)
    return float(stats.f.sf(max(f, 0.0), df_num, df_den))


#: Spread (in units of the largest absolute score) below which errors count as constant: float rounding of M - H
#: is ~1e-16 of the scores, so e.g. M = H + 0.3 gives errors that differ only by rounding.
CONSTANT_SPREAD = 1e-12


def tss_floor(n: int, unit: float) -> float:
    """TSS at or below which y is treated as constant: n (CONSTANT_SPREAD * unit)^2."""
    return float(n) * (CONSTANT_SPREAD * unit) ** 2


def group_codes(groups: ArrayLike, n: int) -> tuple[NDArray[Any], NDArray[Any]]:
    """The sorted distinct subgroup labels (as strings) and each response's index among them.

    Raises ``ValueError`` when ``groups`` does not have ``n`` labels.

    Examples
    --------
    >>> names, codes = group_codes(["b", "a", "b"], 3)
    >>> names.tolist(), codes.tolist()
    (['a', 'b'], [1, 0, 1])
    """
    g = pd.Series(np.asarray(groups, dtype=object)).astype(str).to_numpy()
    if g.size != n:
        raise ValueError(f"groups has {g.size} labels for {n} responses")
    names, codes = np.unique(g, return_inverse=True)
    return names, codes.reshape(-1)
