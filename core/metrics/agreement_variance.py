"""Linearised standard errors of the chance-corrected coefficients (Gwet 2014, sections 5.3-5.5).

Each coefficient kappa = (pa - pe) / (1 - pe) is linearised into per-subject terms kappa*_i whose mean is kappa;
Var(kappa) = (1 - f) / (n (n - 1)) sum_i (kappa*_i - kappa)^2 with f = n / N the sampling fraction (0 for an
infinite population, the default). The notation is :mod:`core.metrics.agreement`'s.
"""
from __future__ import annotations

import numpy as np

from core.metrics.agreement_totals import category_matrix
from core.metrics.weights import agreement_weights
from core.metrics.data import WEIGHTS, Weights, check_option
from core.metrics.notes import undefined


def gwet_standard_errors(ratings, categories, *, weights: Weights | tuple[Weights, ...] = "identity") -> dict:
    """Analytic standard errors of Gwet's AC, Brennan-Prediger and Fleiss' kappa (Gwet 2014, sections 5.3-5.5).

    Linearised per-subject terms over the n subjects with a rating (n2 of them with two or more):
    c_i = (n / n2) (pa_i - pe 1[r_i >= 2]) / (1 - pe), pa_i = sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1)),
    c*_i = c_i - 2 (1 - coef) (pe_i - pe) / (1 - pe) with pe_i = T_w / (q (q - 1)) sum_k r_ik (1 - pi_k) / r_i
    (AC), sum_k r_ik pi+_k / r_i with pi+_k = sum_l w_kl pi_l (Fleiss), pe (BP; then c*_i = c_i);
    Var = sum_i (c*_i - coef)^2 / (n (n - 1)) (infinite population, f = 0).
    O(N x raters^2) time and O(N x raters) memory.

    Parameters
    ----------
    ratings : array of shape (n_subjects, n_raters)
    categories : array-like of shape (q,)
    weights : str or tuple of str, default "identity"

    Returns
    -------
    dict ``{"gwet", "bp", "fleiss"}`` of standard errors; with a tuple of weight names,
    ``{weights: {"gwet", "bp", "fleiss"}}``.

    References
    ----------
    Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed., sections 5.3-5.5.

    Examples
    --------
    Gwet's (2014) 4-rater data; AC1's standard error is 0.14295 in the handbook:

    >>> import numpy as np
    >>> nan = np.nan
    >>> ratings = np.array([[1, 1, nan, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
    ...                     [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [nan, 5, 5, 5], [nan, nan, 1, 1],
    ...                     [nan, nan, 3, nan]])
    >>> round(gwet_standard_errors(ratings, [1, 2, 3, 4, 5])["gwet"], 5)
    0.14295
    """
    idx, cats = category_matrix(ratings, categories)
    several = isinstance(weights, (tuple, list))
    names = tuple(weights) if several else (weights,)
    for wname in names:
        check_option("weights", wname, WEIGHTS)
    q = cats.size
    valid = idx >= 0
    r = valid.sum(axis=1)
    keep = r >= 1
    idx, valid, r = idx[keep], valid[keep], r[keep].astype(np.float64)
    n = idx.shape[0]
    n2 = float((r >= 2).sum())
    if n < 2 or n2 < 1:
        reason = undefined("analytic standard errors need at least 2 rated responses and one with two ratings")
        res = {"gwet": reason, "bp": reason, "fleiss": reason}
        return {w: dict(res) for w in names} if several else res
    R = idx.shape[1]
    safe = np.maximum(idx, 0)
    # unordered rater pairs; each counts twice (w is symmetric)
    pair_cells = [(None if valid.all() else valid[:, j] & valid[:, k], safe[:, j] * q + safe[:, k])
                  for j in range(R) for k in range(j + 1, R)]
    inv_r = np.broadcast_to((1.0 / r)[:, None], idx.shape)
    pi = np.bincount(idx[valid], weights=inv_r[valid], minlength=q) / n
    two = (r >= 2).astype(np.float64)
    denom = np.where(r >= 2, r * (r - 1.0), 1.0)

    complete = bool(valid.all())

    def per_subject(values_by_cat: np.ndarray) -> np.ndarray:
        acc = np.zeros(n)
        for j in range(R):
            acc += values_by_cat[safe[:, j]] if complete else np.where(valid[:, j], values_by_cat[safe[:, j]], 0.0)
        return acc / r

    results = {}
    for wname in names:
        w = agreement_weights(cats, wname)
        flat = w.ravel()
        pair_sum = np.zeros(n)
        for ok, cell in pair_cells:
            pair_sum += 2.0 * (flat[cell] if ok is None else np.where(ok, flat[cell], 0.0))
        pa_i = np.where(r >= 2, pair_sum / denom, 0.0)
        pa = pa_i.sum() / n2
        tw = w.sum()
        wpi = w @ pi
        out = {}
        terms = [("bp", tw / q**2, None), ("fleiss", float(pi @ wpi), per_subject(wpi))]
        if q > 1:
            terms.insert(0, ("gwet", tw / (q * (q - 1)) * float((pi * (1 - pi)).sum()),
                             tw / (q * (q - 1)) * per_subject(1.0 - pi)))
        else:
            out["gwet"] = undefined("Gwet's AC needs at least 2 categories")
        for name, pe, pe_i in terms:
            if not pe < 1.0 - 1e-15:
                out[name] = undefined(f"no standard error: {name} is undefined (chance agreement is 1)")
                continue
            coef = (pa - pe) / (1.0 - pe)
            c_i = (n / n2) * (pa_i - pe * two) / (1.0 - pe)
            if pe_i is not None:
                c_i = c_i - 2.0 * (1.0 - coef) * (pe_i - pe) / (1.0 - pe)
            out[name] = float(np.sqrt(np.sum((c_i - coef) ** 2) / (n * (n - 1.0))))
        results[wname] = out
    return results if several else results[names[0]]
