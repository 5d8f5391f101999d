"""Standard errors, intervals and p-values of the chance-corrected coefficients (Gwet 2014, sections 5.3-5.5).

Each coefficient kappa = (pa - pe) / (1 - pe) is linearised into per-subject terms kappa*_i (notation of
:mod:`core.metrics.estimates.agreement`; n subjects with a rating, n2 of them with two or more):

    kappa_i  = (n / n2) (pa_i - pe 1[r_i >= 2]) / (1 - pe),  pa_i = sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1))
    kappa*_i = kappa_i - 2 (1 - kappa) (pe_i - pe) / (1 - pe)
    Var(kappa) = (1 - f) / (n (n - 1)) sum_i (kappa*_i - kappa)^2,   f = n / N (N the population size; f = 0
                 for an infinite population, the default)

with the subject's chance term pe_i: Gwet's AC  T_w / (q (q - 1)) sum_k r_ik (1 - pi_k) / r_i; Fleiss
sum_k r_ik pi+_k / r_i with pi+_k = sum_l w_kl pi_l; Brennan-Prediger none (pe is fixed); Conger the rater-level
linearisation of Gwet (2014, section 5.4) (irrCAC ``raw.py`` ``conger``); Krippendorff's alpha Gwet's
linearisation over the n' subjects with two or more ratings (irrCAC ``krippendorff``). Intervals and tests use
Student's t with n - 1 degrees of freedom (n' - 1 for Krippendorff), the upper bound capped at 1, as irrCAC.

Every figure of one evaluation that has a closed-form interval, for both engines (:func:`closed_form_intervals`):
Pearson's r by Fisher's z (:func:`~core.metrics.intervals.analytic.pearson_analytic`), every chance-corrected
coefficient of the pairwise and all-raters blocks by Gwet's linearised standard error.

Deliberate difference: irrCAC's Brennan-Prediger p-value is one-sided (``1 - F_t``); ours is two-sided, as for
every other coefficient (and as Gwet's R package).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from easl_toolkit.core.metrics.data import WEIGHTS, Weights, agreement_weights, as_ratings, category_index, check_option
from easl_toolkit.core.metrics.estimates.agreement_totals import category_counts, rating_patterns
from easl_toolkit.core.metrics.estimates.comparisons import Comparisons, PointEstimates
from easl_toolkit.core.metrics.intervals.analytic import (
    T_METHOD,
    Analytic,
    pearson_analytic,
    student_t_ci,
    student_t_p_value,
)
from easl_toolkit.core.metrics.notes import undefined
from easl_toolkit.core.metrics.registry import REPORT_WEIGHTS, report_name

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


class Inference(NamedTuple):
    """A coefficient with its standard error, t-interval (upper bound capped at 1) and two-sided p-value."""

    value: float
    se: float
    low: float
    high: float
    p_value: float
    df: int


def from_linearised(lin: Linearised, f: float, confidence: float) -> Inference:
    """The :class:`Inference` of one linearised coefficient ``(value, sum of squares, n)``:
    se = sqrt((1 - f) sq / (n (n - 1))), the t-interval and two-sided p-value with n - 1 degrees of freedom."""
    value, sq, m = lin
    se = float(np.sqrt((1.0 - f) * sq / (m * (m - 1.0))))
    low, high = student_t_ci(value, se, m, confidence)
    return Inference(float(value), se, low, high, student_t_p_value(value, se, m), int(m - 1))


def agreement_inference(
    ratings: ArrayLike,
    categories: ArrayLike,
    *,
    weights: Weights = "identity",
    coefficients: tuple[str, ...] = COEFFICIENTS,
    confidence: float = 0.95,
    population_size: float | None = None,
) -> dict[str, Inference]:
    """Every coefficient with its linearised standard error, t-interval and two-sided p-value (irrCAC ``raw.CAC``).

    Parameters
    ----------
    ratings, categories, weights
        As :func:`~core.metrics.estimates.agreement.chance_corrected_agreement`.
    coefficients : tuple of str
        A subset of ``("gwet", "bp", "fleiss", "conger", "krippendorff")``.
    confidence : float, default 0.95
    population_size : float, optional
        N, the number of subjects in the population, at least n (finite-population correction f = n / N; default
        infinite; a smaller N is a ValueError: :func:`fpc_fraction`).

    Returns
    -------
    dict name -> Inference(value, se, low, high, p_value, df)
        NaN fields (with an UndefinedMetricWarning) when fewer than 2 subjects are rated or none has 2 ratings.

    References
    ----------
    Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed., sections 5.3-5.5; irrCAC ``raw.py``.

    Examples
    --------
    Gwet's (2014) 4-rater data (irrCAC ``raw_4raters``); irrCAC gives AC1 0.77544, se 0.14295,
    interval (0.46081, 1):

    >>> from core.metrics.estimates.agreement import GWET_4RATERS as ratings
    >>> ac1 = agreement_inference(ratings, [1, 2, 3, 4, 5])["gwet"]
    >>> [round(x, 5) for x in (ac1.value, ac1.se, ac1.low, ac1.high)]
    [0.77544, 0.14295, 0.46081, 1.0]
    """
    check_option("weights", weights, WEIGHTS)
    for name in coefficients:
        check_option("coefficient", name, COEFFICIENTS)
    cats = np.asarray(categories, dtype=np.float64)
    idx = category_index(as_ratings(ratings), cats)
    idx = idx[(idx >= 0).any(axis=1)]
    n = idx.shape[0]
    nan = float("nan")
    blank = {c: Inference(nan, nan, nan, nan, nan, 0) for c in coefficients}
    if n < 2 or not ((idx >= 0).sum(axis=1) >= 2).any():
        undefined("standard errors need at least 2 rated subjects and one with two ratings")
        return blank
    f = fpc_fraction(n, population_size)
    out = dict(blank)
    rows, mult = rating_patterns(idx, cats.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        lin = linearised(rows, agreement_weights(cats, weights), tuple(coefficients), mult=mult)
    for name in coefficients:
        if name not in lin:
            undefined("Gwet's AC needs at least 2 categories")
            continue
        value, _, m = lin[name]
        if not np.isfinite(value) or m < 2:
            undefined(f"no standard error: {name} is undefined for these data")
            continue
        out[name] = from_linearised(lin[name], f, confidence)
    return out


def fpc_fraction(n: float, population_size: float | None) -> float:
    """The sampling fraction f = n / N of the finite-population correction (1 - f) (Gwet 2014, section 5.3);
    0 for an infinite population (``None``).

    Raises
    ------
    ValueError
        N is not a finite number of at least n: a sample larger than its population has no standard error.
    """
    if population_size is None:
        return 0.0
    if not (np.isfinite(population_size) and population_size >= n):
        raise ValueError(
            f"the population size {population_size:g} is smaller than the {n:g} rated subjects of the sample"
        )
    return n / float(population_size)


def table_inference(
    table: ArrayLike,
    *,
    categories: ArrayLike | None = None,
    weights: Weights = "identity",
    confidence: float = 0.95,
    population_size: float | None = None,
) -> dict[str, Inference]:
    """:func:`agreement_inference` of two raters given as a q x q contingency table (irrCAC ``table.CAC``).

    Gwet's (2014, ch. 2-4) two-rater variances divide by n^2 where the raw-data linearisation divides by
    n (n - 1): Var_table = Var_raw (n - 1) / n. Intervals and p-values as :func:`agreement_inference` (t with
    n - 1 df, capped at 1). ``conger`` is Cohen's kappa and ``fleiss`` Scott's pi here.

    Parameters
    ----------
    table : array of shape (q, q)
        Counts of subjects rated k by rater 1 and l by rater 2.
    categories : array-like of shape (q,), optional
        The category values (default 1..q, as irrCAC for label tables).
    weights, confidence, population_size
        As :func:`agreement_inference`.

    Returns
    -------
    dict name -> Inference

    References
    ----------
    Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed., ch. 2-4; irrCAC ``table.py``.

    Examples
    --------
    irrCAC's ``table_cont3x3abstractors``: AC1 0.84933, se 0.04322, interval (0.76358, 0.93508):

    >>> res = table_inference([[13, 0, 0], [0, 20, 7], [0, 4, 56]])["gwet"]
    >>> [round(x, 5) for x in (res.value, res.se, res.low, res.high)]
    [0.84933, 0.04322, 0.76358, 0.93508]
    """
    t = np.asarray(table, dtype=np.float64)
    q = t.shape[0]
    if t.shape != (q, q) or (t < 0).any() or not np.array_equal(t, np.round(t)):
        raise ValueError("table must be a square matrix of non-negative counts")
    cats = np.arange(1.0, q + 1.0) if categories is None else np.asarray(categories, dtype=np.float64)
    k1, l2 = np.nonzero(t)
    reps = t[k1, l2].astype(np.int64)
    ratings = np.column_stack([np.repeat(cats[k1], reps), np.repeat(cats[l2], reps)])
    n = ratings.shape[0]
    out = {}
    for name, res in agreement_inference(
        ratings, cats, weights=weights, confidence=confidence, population_size=population_size
    ).items():
        se = res.se * np.sqrt((n - 1.0) / n) if n > 0 else res.se
        low, high = student_t_ci(res.value, se, n, confidence)
        out[name] = Inference(res.value, float(se), low, high, student_t_p_value(res.value, se, n), res.df)
    return out


def gwet_standard_errors(
    ratings: ArrayLike, categories: ArrayLike, *, weights: Weights | tuple[Weights, ...] = "identity"
) -> dict[str, float] | dict[str, dict[str, float]]:
    """Standard errors of Gwet's AC, Brennan-Prediger and Fleiss' kappa (:func:`agreement_inference`).

    Parameters
    ----------
    ratings, categories : as :func:`agreement_inference`
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

    >>> from core.metrics.estimates.agreement import GWET_4RATERS as ratings
    >>> round(gwet_standard_errors(ratings, [1, 2, 3, 4, 5])["gwet"], 5)
    0.14295
    """
    names = tuple(weights) if isinstance(weights, (tuple, list)) else (weights,)
    res: dict[str, dict[str, float]] = {}
    for w in names:
        inference = agreement_inference(ratings, categories, weights=w, coefficients=("gwet", "bp", "fleiss"))
        res[w] = {k: v.se for k, v in inference.items()}
    return res if isinstance(weights, (tuple, list)) else res[names[0]]


def pattern_inference(
    rows: NDArray[Any],
    mult: NDArray[Any],
    cats: NDArray[Any],
    *,
    confidence: float = 0.95,
    population_size: float | None = None,
    weightings: tuple[Weights, ...] = REPORT_WEIGHTS,
) -> dict[str, Inference]:
    """:func:`agreement_inference` of every reported coefficient, keyed by its report name (``gwet_ac1``, ...), from
    the distinct rating patterns ``rows`` (category indices, -1 = missing) of the rated subjects and their counts
    ``mult`` (:func:`rating_patterns`); the patterns of disjoint sets of subjects add, so the distributed engine
    merges them. Krippendorff's alpha has a linearised variance at the nominal (identity weights) and interval
    (quadratic weights) levels; ordinal alpha has none."""
    mult = np.asarray(mult, dtype=np.float64)
    n = float(mult.sum())
    if n < 2 or not (((rows >= 0).sum(axis=1) >= 2) & (mult > 0)).any():
        return {}
    f = fpc_fraction(n, population_size)
    counts = category_counts(rows, cats.size)
    out: dict[str, Inference] = {}
    for weights in weightings:
        with np.errstate(divide="ignore", invalid="ignore"):
            lin = linearised(rows, agreement_weights(cats, weights), COEFFICIENTS, counts=counts, mult=mult)
        for coef, (value, sq, m) in lin.items():
            name = report_name(coef, weights)
            if name is None or not np.isfinite(value) or m < 2:
                continue
            with np.errstate(invalid="ignore"):
                out[name] = from_linearised((value, sq, m), f, confidence)
    return out


#: The rating patterns of a comparison and their counts (``rating_patterns``).
Patterns = tuple[NDArray[Any], ...]


def closed_form_intervals(
    comp: Comparisons,
    point: PointEstimates,
    *,
    confidence: float,
    population_size: float | None,
    raters: Patterns | None = None,
) -> dict[str, Analytic]:
    """Closed-form intervals keyed like ``point.values``: Fisher z for r; Gwet's linearised standard errors with t
    intervals (irrCAC) for every chance-corrected coefficient of the pairwise blocks (their rating patterns are the
    cells of their joint tables) and of the all-raters block (the rating patterns ``raters``, computed from
    ``comp.raters`` when not given; the patterns of disjoint sets of subjects add, so the Dask engine merges them)."""
    cats, t = comp.cats, point.totals
    kw: dict[str, Any] = {"confidence": confidence, "population_size": population_size}
    out: dict[str, Analytic] = {}
    for suite in [*comp.systems.values(), *([comp.human_human] if comp.human_human is not None else [])]:
        p = suite.prefix
        out[p + "corr"] = pearson_analytic(point.values.get(p + "corr", np.nan), int(t[p + "n"]), confidence)
        if cats is not None:
            joint = t[p + "joint"].reshape(cats.size, cats.size)
            cells = np.argwhere(joint > 0)
            out.update(as_analytic(p, pattern_inference(cells, joint[cells[:, 0], cells[:, 1]], cats, **kw)))
    if raters is None and comp.raters is not None and cats is not None:
        raters = rating_patterns(comp.raters[(comp.raters >= 0).any(axis=1)], cats.size)
    if raters is not None and cats is not None:
        out.update(as_analytic("a:", pattern_inference(raters[0], raters[1], cats, weightings=comp.weightings, **kw)))
    return out


def as_analytic(prefix: str, inference: dict[str, Inference]) -> dict[str, Analytic]:
    """The :class:`Analytic` records of Gwet's t-intervals, keyed ``prefix + name``."""
    return {prefix + k: Analytic(v.se, v.low, v.high, v.p_value, T_METHOD) for k, v in inference.items()}
