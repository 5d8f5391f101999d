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
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from core.metrics.data import as_pair
from core.metrics.notes import undefined


def _dummies(codes: np.ndarray, k: int, base: int) -> np.ndarray:
    cols = [j for j in range(k) if j != base]
    return (codes[:, None] == np.asarray(cols)[None, :]).astype(np.float64) if cols else np.zeros((codes.size, 0))


def _ols(y: np.ndarray, x: np.ndarray) -> dict:
    """OLS with an intercept: coefficients, RSS, rank p (without intercept), R2, adjusted R2."""
    n = y.size
    design = np.column_stack([np.ones(n), x])
    coef, _, rank, _ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    rss = float(np.einsum("i,i->", resid, resid))
    tss = float(((y - y.mean()) ** 2).sum())
    p = int(rank) - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = 1.0 - rss / tss if tss > 0 else np.nan
        adj = 1.0 - (1.0 - r2) * (n - 1) / (n - p - 1) if n - p - 1 > 0 else np.nan
    return {"coef": coef, "rss": rss, "tss": tss, "p": p, "n": n, "r2": r2, "adj_r2": adj}


def _f_test(small: dict, big: dict) -> float:
    """p-value of the F-test of ``big`` against the nested ``small`` model."""
    df_num = big["p"] - small["p"]
    df_den = big["n"] - big["p"] - 1
    if df_num <= 0 or df_den <= 0:
        return float("nan")
    if big["rss"] <= 0:
        return 0.0 if small["rss"] > 0 else float("nan")
    f = ((small["rss"] - big["rss"]) / df_num) / (big["rss"] / df_den)
    return float(stats.f.sf(max(f, 0.0), df_num, df_den))


def fairness_analysis(y_true, y_pred, groups) -> dict:
    """Overall score accuracy, overall score difference and conditional score difference (RSMTool semantics).

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
        Human and system scores.
    groups : array-like of shape (n,)
        Subgroup labels (any hashable values).

    Returns
    -------
    dict with ``base_group``, ``groups`` (sizes) and for each of ``osa``, ``osd``, ``csd``: ``value`` (adjusted R2;
    for CSD the difference of adjusted R2), ``p_value``, ``r2``, and ``estimates`` (intercept = base group, then one
    coefficient per other group). NaN with a reason when there is only one group or too few responses.
    """
    h, m = as_pair(y_true, y_pred)
    g = pd.Series(np.asarray(groups, dtype=object)).astype(str).to_numpy()
    if g.size != h.size:
        raise ValueError(f"groups has {g.size} labels for {h.size} responses")
    names, codes = np.unique(g, return_inverse=True)
    codes = codes.reshape(-1)
    sizes = np.bincount(codes, minlength=names.size)
    base = int(np.argmax(sizes)) if sizes.size else 0     # largest; ties: first in sorted order
    out = {"base_group": str(names[base]) if names.size else None,
           "groups": {str(k): int(v) for k, v in zip(names, sizes)}}
    if names.size < 2 or h.size < 3:
        reason = undefined("fairness analyses need at least two subgroups and three responses")
        for key in ("osa", "osd", "csd"):
            out[key] = {"value": reason, "p_value": reason, "r2": reason, "estimates": {}}
        return out
    error = m - h
    se = error ** 2
    xg = _dummies(codes, names.size, base)
    others = [str(names[j]) for j in range(names.size) if j != base]
    hn, hcodes = np.unique(h, return_inverse=True)
    hcodes = hcodes.reshape(-1)
    h_base = int(np.argmax(np.bincount(hcodes, minlength=hn.size)))   # most frequent score; ties: lowest
    xh = _dummies(hcodes, hn.size, h_base)
    null = _ols(error, np.zeros((h.size, 0)))
    null_se = _ols(se, np.zeros((h.size, 0)))

    def record(model: dict, value: float, p_value: float) -> dict:
        est = {"Intercept": float(model["coef"][0])}
        est.update({name: float(v) for name, v in zip(others, model["coef"][1:1 + len(others)])})
        return {"value": float(value), "p_value": float(p_value), "r2": float(model["r2"]), "estimates": est}

    osa = _ols(se, xg)
    osd = _ols(error, xg)
    out["osa"] = record(osa, osa["adj_r2"], _f_test(null_se, osa))
    out["osd"] = record(osd, osd["adj_r2"], _f_test(null, osd))
    full = _ols(error, np.column_stack([xg, xh]))
    base_h = _ols(error, xh)
    out["csd"] = record(full, full["adj_r2"] - base_h["adj_r2"], _f_test(base_h, full))
    for key in ("osa", "osd", "csd"):
        if not np.isfinite(out[key]["value"]):
            out[key]["value"] = undefined(f"fairness {key.upper()} is undefined: no variance in the errors or too few "
                                          "responses for the model")
    return out
