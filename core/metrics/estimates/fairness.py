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
the group to ``error ~ C(H)`` (CSD). adjR2 = 1 - (1 - R2) (n - 1) / (n - p - 1) with p the rank of the design
without the intercept.

The OLS fits and F-tests are in :mod:`core.metrics.estimates.fairness_ols`; the same analyses on many bootstrap
resamples at once in :mod:`core.metrics.estimates.fairness_resampled`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from core.metrics.data import as_pair
from core.metrics.estimates.fairness_ols import dummies, f_test, figure_record, group_codes, ols, tss_floor
from core.metrics.notes import undefined


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
    ``fit(y, X)``: the OLS record (:func:`~core.metrics.estimates.fairness_ols.ols`) of the error (``y = "e"``) or
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
