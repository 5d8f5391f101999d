"""Linearised variances of the chance-corrected coefficients (Gwet 2014, sections 5.3-5.5): the per-subject terms.

Each coefficient kappa = (pa - pe) / (1 - pe) is linearised into per-subject terms kappa*_i (notation of
:mod:`core.metrics.estimates.agreement`; n subjects with a rating, n2 of them with two or more):

    kappa_i  = (n / n2) (pa_i - pe 1[r_i >= 2]) / (1 - pe),  pa_i = sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1))
    kappa*_i = kappa_i - 2 (1 - kappa) (pe_i - pe) / (1 - pe)
    Var(kappa) = (1 - f) / (n (n - 1)) sum_i (kappa*_i - kappa)^2,   f = n / N (N the population size; f = 0
                 for an infinite population, the default)

with the subject's chance term pe_i: Gwet's AC  T_w / (q (q - 1)) sum_k r_ik (1 - pi_k) / r_i; Fleiss
sum_k r_ik pi+_k / r_i with pi+_k = sum_l w_kl pi_l; Brennan-Prediger none (pe is fixed); Conger the rater-level
linearisation of Gwet (2014, section 5.4) (irrCAC ``raw.py`` ``conger``); Krippendorff's alpha Gwet's
linearisation over the n' subjects with two or more ratings (irrCAC ``krippendorff``).

The standard errors, t-intervals and p-values built on these sums are in
:mod:`core.metrics.intervals.agreement_variance`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from core.metrics.estimates.agreement_totals import category_counts

#: The coefficients with a linearised variance.
COEFFICIENTS = ("gwet", "bp", "fleiss", "conger", "krippendorff")
#: One coefficient of :func:`linearised`: (value, sum_i m_i (terms_i - centre)^2, number of subjects).
Linearised = tuple[float, float, float]


def _per_subject(
    index: NDArray[Any], valid: NDArray[Any], values_by_cat: NDArray[Any], r: NDArray[Any]
) -> NDArray[Any]:
    """sum_j v[x_ij] / r_i over the subject's ratings (O(n x raters))."""
    acc = np.where(valid, values_by_cat[np.maximum(index, 0)], 0.0).sum(axis=1)
    per_subject: NDArray[Any] = acc / r
    return per_subject


def linearised(
    index: NDArray[Any],
    w: NDArray[Any],
    which: tuple[str, ...] = COEFFICIENTS,
    counts: NDArray[Any] | None = None,
    mult: NDArray[Any] | None = None,
) -> dict[str, Linearised]:
    """Point values and the variance sums of the linearised per-subject terms of each coefficient.

    ``index`` is the (n, R) category-index matrix (-1 = missing) of the subjects with at least one rating (or of
    their distinct patterns, each standing for ``mult`` subjects: :func:`rating_patterns`), ``w`` the (q, q)
    agreement weights, ``counts`` the matrix r_ik of the rows (computed when not given). Returns
    ``{name: (value, sum_i (terms_i - centre)^2, n_subjects)}``; the variance is that sum over
    n_subjects (n_subjects - 1), times 1 - f.
    """
    rows, R = index.shape
    q = w.shape[0]
    m = np.ones(rows) if mult is None else np.asarray(mult, dtype=np.float64)
    n = m.sum()
    valid = index >= 0
    r = valid.sum(axis=1).astype(np.float64)
    if counts is None:
        counts = category_counts(index, q)
    weighted = counts @ w.T  # r*_ik
    sum_q = (counts * (weighted - 1.0)).sum(axis=1)
    two = r >= 2
    n2 = np.float64(m[two].sum())
    pa_i = np.where(two, sum_q / np.where(two, r * (r - 1.0), 1.0), 0.0)
    pa = (m * pa_i).sum() / n2
    pi = (m[:, None] * counts / r[:, None]).sum(axis=0) / n
    tw = w.sum()
    out: dict[str, Linearised] = {}

    def finish(name: str, pe: float, pe_i: NDArray[Any] | None) -> None:
        value = (pa - pe) / (1.0 - pe)
        terms = (n / n2) * (pa_i - pe * two) / (1.0 - pe)
        if pe_i is not None:
            terms = terms - 2.0 * (1.0 - value) * (pe_i - pe) / (1.0 - pe)
        out[name] = (value, (m * (terms - value) ** 2).sum(), n)

    if "gwet" in which and q >= 2:
        scale = tw / (q * (q - 1))
        finish("gwet", scale * np.float64((pi * (1 - pi)).sum()), scale * _per_subject(index, valid, 1.0 - pi, r))
    if "bp" in which:
        finish("bp", tw / q**2, None)
    if "fleiss" in which:
        wpi = (w @ pi + w.T @ pi) / 2.0
        finish("fleiss", np.float64(pi @ w @ pi), _per_subject(index, valid, wpi, r))
    if "conger" in which:
        finish("conger", *_conger(index, w, m, n))
    if "krippendorff" in which:
        out["krippendorff"] = _krippendorff(counts, sum_q, r, w, m)
    return out


def _conger(index: NDArray[Any], w: NDArray[Any], m: NDArray[Any], n: float) -> tuple[float, NDArray[Any]]:
    """Conger's chance agreement and its per-subject terms (Gwet 2014, section 5.4; irrCAC ``conger``)."""
    valid = index >= 0
    R = index.shape[1]
    q = w.shape[0]
    ng = (m[:, None] * valid).sum(axis=0)  # ratings per rater
    n_gk = np.zeros((R, q))
    for g in range(R):
        n_gk[g] = np.bincount(index[valid[:, g], g], weights=m[valid[:, g]], minlength=q)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = n_gk / ng[:, None]  # p_gk
    pbar = p.sum(axis=0) / R
    s2 = (p.T @ p - R * np.outer(pbar, pbar)) / (R - 1.0)
    pe = np.float64((w * (np.outer(pbar, pbar) - s2 / R)).sum())
    c = p.sum(axis=0)[None, :] - p  # C_gk = sum_g' p_g'k - p_gk
    cw = c @ w  # (C w)_g,x
    bc = ((p @ w.T) * c).sum(axis=1)  # sum_k B_gk C_gk, B = p w^T
    g_idx = np.broadcast_to(np.arange(R), index.shape)
    a_term = np.where(valid, cw[g_idx, np.maximum(index, 0)], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = (n / ng)[None, :] * (a_term - (valid - ng[None, :] / n) * bc[None, :])
    return pe, lam.sum(axis=1) / (R * (R - 1.0))


def _krippendorff(
    counts: NDArray[Any], sum_q: NDArray[Any], r: NDArray[Any], w: NDArray[Any], m: NDArray[Any]
) -> Linearised:
    """Krippendorff's alpha (weighted form) and its linearised terms (Gwet 2014, section 5.5; irrCAC)."""
    keep = r >= 2
    counts, sum_q, r, m = counts[keep], sum_q[keep], r[keep], m[keep]
    n = m.sum()
    r_mean = (m * r).sum() / n
    eps = 1.0 / (m * r).sum()
    pa_prime = np.float64((m * sum_q / (r_mean * (r - 1.0))).sum() / n)
    pa = (1.0 - eps) * pa_prime + eps
    pi = (m[:, None] * counts / r_mean).sum(axis=0) / n
    pe = np.float64(pi @ w @ pi)
    value = (pa - pe) / (1.0 - pe)
    value_prime = (pa_prime - pe) / (1.0 - pe)
    pa_i = sum_q / (r_mean * (r - 1.0)) - pa * (r - r_mean) / r_mean
    k_i = (pa_i - pe) / (1.0 - pe)
    wpi = (w @ pi + w.T @ pi) / 2.0
    pe_i = counts @ wpi / r_mean - pe * (r - r_mean) / r_mean
    terms = k_i - 2.0 * (1.0 - value_prime) * (pe_i - pe) / (1.0 - pe)
    return value, (m * (terms - value_prime) ** 2).sum(), n
