"""True-score evaluation: rater error variance, true score variance, MSE(T|M) and PRMSE for any number of ratings.

Source: Loukina, Madnani, Cahill, Yao, Johnson, Riordan & McCaffrey (2020), "Using PRMSE to evaluate automated
scoring systems in the presence of label noise", BEA workshop, Appendix B, equations (4)-(8); RSMTool
``rsmtool.utils.prmse``. Notation: N responses with at least one rating, c_i ratings of response i, Hbar_i their
mean, c. = sum c_i, Hbar = sum c_i Hbar_i / c. (mean of all ratings), M_i the system score.

Every quantity is a function of sums over responses (:mod:`core.metrics.estimates.sums`), so the bootstrap evaluates
PRMSE for all resamples with one matrix product.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from easl_toolkit.core.metrics.data import as_ratings, as_vector
from easl_toolkit.core.metrics.estimates.observed import pearson_r
from easl_toolkit.core.metrics.estimates.sums import RowSums, nan_where
from easl_toolkit.core.metrics.notes import caution, quiet

#: Recommended minimum number of double-scored responses (Loukina et al. 2020, section 7).
MIN_DOUBLE_SCORED = 1000
#: ... when the human-human correlation exceeds :data:`HIGH_AGREEMENT_R`.
MIN_DOUBLE_SCORED_HIGH_AGREEMENT = 500
HIGH_AGREEMENT_R = 0.65


class TrueScoreTotals(NamedTuple):
    """The terms of the Appendix B estimators, summed over responses (or, from :func:`true_score_sums`, per response):
    each an array, of shape ``()`` for the sample, ``(B,)`` for ``B`` bootstrap resamples, ``(n,)`` per response.

    In a :class:`~core.metrics.estimates.sums.RowSums` (the bootstrap's matrix product, the Dask partitions) each
    term is stored under its key in :data:`TERM_KEYS`, after a prefix naming the comparison; :meth:`of` reads them
    back.

    Attributes
    ----------
    n : responses with at least one rating, ``sum 1[c_i >= 1]``
    c, c2 : ``c. = sum c_i`` and ``sum c_i^2``
    s1, s2 : ``sum c_i (Hbar_i - s)`` and ``sum c_i (Hbar_i - s)^2``, about the centring ``s``
    within : ``sum_i sum_j (H_ij - Hbar_i)^2`` over responses with ``c_i >= 2``
    d : ``sum (c_i - 1)`` over responses with ``c_i >= 2``
    n_multiple, n_single : responses with two or more ratings, with one
    e : ``sum c_i (Hbar_i - M_i)^2`` (with a system; None without)
    """

    n: NDArray[Any]
    c: NDArray[Any]
    c2: NDArray[Any]
    s1: NDArray[Any]
    s2: NDArray[Any]
    within: NDArray[Any]
    d: NDArray[Any]
    n_multiple: NDArray[Any]
    n_single: NDArray[Any]
    e: NDArray[Any] | None = None

    @classmethod
    def of(cls, totals: Mapping[str, NDArray[Any]], prefix: str = "") -> TrueScoreTotals:
        """The terms stored in ``totals`` under ``prefix`` + :data:`TERM_KEYS` (``e`` None when absent)."""
        terms = {f: totals[prefix + key] for f, key in TERM_KEYS.items() if f != "e"}
        return cls(**terms, e=totals.get(prefix + TERM_KEYS["e"]))

    def add_to(self, sums: RowSums, prefix: str = "") -> None:
        """Add the per-response terms to ``sums`` under ``prefix`` + :data:`TERM_KEYS` (``e`` when given)."""
        for f, values in zip(self._fields, self):
            if values is not None:
                sums.add(prefix + TERM_KEYS[f], values)


#: The key of each term of :class:`TrueScoreTotals` in a :class:`~core.metrics.estimates.sums.RowSums` (the
#: totals the bootstrap and the Dask partitions exchange).
TERM_KEYS: dict[str, str] = {
    "n": "N",
    "c": "C",
    "c2": "C2",
    "s1": "S1",
    "s2": "S2",
    "within": "W",
    "d": "D",
    "n_multiple": "N_multiple",
    "n_single": "N_single",
    "e": "E",
}


def true_score_sums(ratings: ArrayLike, system: ArrayLike | None = None, prefix: str = "") -> tuple[RowSums, float]:
    """Per-response terms of the Appendix B estimators (:class:`TrueScoreTotals`, stored under ``prefix``); returns
    the sums and the centring constant.

    Terms: 1[c_i >= 1], c_i, c_i^2, c_i (Hbar_i - s), c_i (Hbar_i - s)^2, within-response sum of squares
    sum_j (H_ij - Hbar_i)^2, (c_i - 1) 1[c_i >= 2], 1[c_i >= 2], 1[c_i == 1] and c_i (Hbar_i - M_i)^2, with
    s = the mean of all ratings (centring for accuracy; the estimators are shift-invariant).
    """
    h = as_ratings(ratings)
    obs = ~np.isnan(h)
    c = obs.sum(axis=1).astype(np.float64)
    total = np.where(obs, h, 0.0).sum(axis=1)
    rated = c >= 1
    with np.errstate(divide="ignore", invalid="ignore"):
        hbar = np.where(rated, total / np.where(rated, c, 1.0), 0.0)
    s = float(total.sum() / c.sum()) if c.sum() > 0 else 0.0
    within = np.where(obs, (h - hbar[:, None]) ** 2, 0.0).sum(axis=1)
    e = None
    if system is not None:
        m = as_vector(system, "system")
        if m.shape != (h.shape[0],):
            raise ValueError(f"system has {m.size} scores for {h.shape[0]} responses")
        if not np.isfinite(m[rated]).all():
            raise ValueError("system scores must be finite for every rated response")
        e = np.where(rated, c * (hbar - np.where(rated, m, 0.0)) ** 2, 0.0)
    terms = TrueScoreTotals(
        n=rated.astype(np.float64),
        c=c,
        c2=c * c,
        s1=c * (hbar - s),
        s2=c * (hbar - s) ** 2,
        within=np.where(c >= 2, within, 0.0),
        d=np.where(c >= 2, c - 1.0, 0.0),
        n_multiple=(c >= 2).astype(np.float64),
        n_single=(c == 1).astype(np.float64),
        e=e,
    )
    sums = RowSums(h.shape[0])
    terms.add_to(sums, prefix)
    return sums, s


def finish_error_variance(t: TrueScoreTotals) -> NDArray[Any]:
    """V_e = sum_i sum_j (H_ij - Hbar_i)^2 / sum_i (c_i - 1) over responses with c_i >= 2 (eq. 4-5)."""
    d = np.asarray(t.d, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ve = t.within / d
    return nan_where(d <= 0, ve, "rater error variance needs at least one response with two or more ratings")


def finish_true_variance(t: TrueScoreTotals, ve: float | NDArray[Any]) -> NDArray[Any]:
    """V_T = [sum c_i (Hbar_i - Hbar)^2 - (N - 1) V_e] / [c. - sum c_i^2 / c.] (eq. 6)."""
    n, c, c2 = t.n, t.c, t.c2
    with np.errstate(divide="ignore", invalid="ignore"):
        s2 = t.s2
        between = s2 - t.s1**2 / c
        between = np.where(between <= 1e-12 * s2, 0.0, between)  # rounding noise of equal means is 0
        den = c - c2 / c
        vt = (between - (n - 1.0) * ve) / den
    return nan_where(~(den > 0), vt, "true score variance needs at least 2 rated responses")


def finish_mse_true(t: TrueScoreTotals, ve: float | NDArray[Any]) -> NDArray[Any]:
    """MSE(T|M) = [sum c_i (Hbar_i - M_i)^2 - N V_e] / c. (eq. 7); needs the system's term ``t.e``."""
    if t.e is None:
        raise ValueError("MSE(T|M) needs the system's term: true_score_sums(ratings, system)")
    with np.errstate(divide="ignore", invalid="ignore"):
        mse = (t.e - t.n * ve) / t.c
    return nan_where(~(t.c > 0), mse, "MSE(T|M) needs at least 1 rated response")


def finish_prmse(t: TrueScoreTotals, ve: float | NDArray[Any]) -> NDArray[Any]:
    """PRMSE = 1 - MSE(T|M) / V_T (eq. 8); NaN when V_T <= 0."""
    vt = finish_true_variance(t, ve)
    mse = finish_mse_true(t, ve)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 - mse / vt
    return nan_where(
        ~np.isnan(vt) & ~(vt > 0), out, "PRMSE is undefined: the estimated true score variance is not positive"
    )


def _error_variance_from(t: TrueScoreTotals, rater_error_variance: float | None) -> float | NDArray[Any]:
    if rater_error_variance is None:
        return finish_error_variance(t)
    ve = float(rater_error_variance)
    if not np.isfinite(ve) or ve < 0:
        raise ValueError(f"rater_error_variance must be a finite non-negative number, got {rater_error_variance!r}")
    return ve


def variance_of_errors(ratings: ArrayLike) -> float:
    """Rater error variance V_e (Loukina et al. 2020, Appendix B eq. 4-5; RSMTool ``variance_of_errors``).

    V_i = sum_j (H_ij - Hbar_i)^2 / (c_i - 1);  V_e = sum_i V_i (c_i - 1) / sum_i (c_i - 1), over responses with
    c_i >= 2. For two ratings per response this is (1 / 2N) sum (H_i2 - H_i1)^2 (eq. 3).

    Parameters
    ----------
    ratings : array of shape (n, R)
        Human ratings, NaN for missing.

    Returns
    -------
    float >= 0; NaN when no response has two ratings.

    References
    ----------
    Loukina, A., Madnani, N., Cahill, A., et al. (2020). Using PRMSE to evaluate automated scoring systems in the
    presence of label noise. BEA workshop, Appendix B.

    Examples
    --------
    Two raters (a list of rater vectors is read as columns):

    >>> variance_of_errors([[2, 3, 4, 5], [3, 3, 6, 4]])
    0.75
    """
    return float(finish_error_variance(TrueScoreTotals.of(true_score_sums(ratings)[0].totals())))


def true_score_variance(ratings: ArrayLike, rater_error_variance: float | None = None) -> float:
    """Variance of the true scores, V_T (Appendix B eq. 6; RSMTool ``true_score_variance``).

    V_T = [sum_i c_i (Hbar_i - Hbar)^2 - (N - 1) V_e] / [c. - sum_i c_i^2 / c.]. ``rater_error_variance``
    replaces V_e by an estimate from another sample.

    Parameters
    ----------
    ratings, rater_error_variance : as :func:`prmse`

    Returns
    -------
    float; NaN when V_e cannot be estimated.

    Examples
    --------
    RSMTool's test vector:

    >>> round(true_score_variance([[2, 3, 5]], rater_error_variance=0.5), 12)
    1.833333333333
    """
    t = TrueScoreTotals.of(true_score_sums(ratings)[0].totals())
    return float(finish_true_variance(t, _error_variance_from(t, rater_error_variance)))


def mse_true(system: ArrayLike, ratings: ArrayLike, rater_error_variance: float | None = None) -> float:
    """Mean squared error of the system score as a predictor of the true score (Appendix B eq. 7; RSMTool ``mse_true``).

    MSE(T|M) = [sum_i c_i (Hbar_i - M_i)^2 - N V_e] / c.

    Parameters
    ----------
    system, ratings, rater_error_variance : as :func:`prmse`

    Returns
    -------
    float; NaN when V_e cannot be estimated.

    Examples
    --------
    RSMTool's test vector:

    >>> round(mse_true([1, 2, 5], [[2, 3, 5]], rater_error_variance=0.5), 12)
    0.166666666667
    """
    t = TrueScoreTotals.of(true_score_sums(ratings, system)[0].totals())
    return float(finish_mse_true(t, _error_variance_from(t, rater_error_variance)))


def prmse(system: ArrayLike, ratings: ArrayLike, rater_error_variance: float | None = None) -> float:
    """Proportional reduction in mean squared error for true scores (Appendix B eq. 8; RSMTool ``prmse_true``).

    PRMSE = 1 - MSE(T|M) / V_T, for any number of ratings per response (single-scored responses included in N).
    ``rater_error_variance`` supplies V_e from another sample. NaN (with a reason) when V_e cannot be estimated
    (no response has two ratings and none is supplied) or V_T <= 0. Values above 1 mean the double-scored sample
    is too small; see :func:`true_score_evaluation` for the sample-size warnings.

    Parameters
    ----------
    system : array-like of shape (n,)
    ratings : array of shape (n, R)
        Human ratings, NaN for missing; any number per response.
    rater_error_variance : float, optional
        V_e estimated from another sample (default: from ``ratings``).

    Returns
    -------
    float <= 1 in expectation; NaN when V_e cannot be estimated or V_T <= 0.

    Examples
    --------
    RSMTool's test vector:

    >>> round(prmse([1, 2, 5], [2, 3, 5], rater_error_variance=0.5), 12)
    0.909090909091
    """
    t = TrueScoreTotals.of(true_score_sums(ratings, system)[0].totals())
    return float(finish_prmse(t, _error_variance_from(t, rater_error_variance)))


def finish_true_score(t: TrueScoreTotals, rater_error_variance: float | None = None) -> dict[str, NDArray[Any]]:
    """The ``true_score`` record (batch-capable): counts, V_e, V_T, MSE(T|M), PRMSE."""
    ve = _error_variance_from(t, rater_error_variance)
    return {
        "N": t.n,
        "N_single": t.n_single,
        "N_multiple": t.n_multiple,
        "rater_error_variance": np.broadcast_to(np.asarray(ve, dtype=np.float64), np.shape(t.n)),
        "true_score_variance": finish_true_variance(t, ve),
        "mse_true": finish_mse_true(t, ve),
        "prmse": finish_prmse(t, ve),
    }


def true_score_evaluation(
    system: ArrayLike, ratings: ArrayLike, rater_error_variance: float | None = None
) -> dict[str, float]:
    """All true-score figures for one system (RSMTool ``true_score_eval`` table), with sample-size warnings.

    Returns a dict with ``N`` (responses with a rating), ``N_raters`` (columns), ``N_single``, ``N_multiple``
    (responses with one / two or more ratings), ``rater_error_variance``, ``true_score_variance``, ``mse_true``
    and ``prmse`` (formulas: :func:`variance_of_errors`, :func:`true_score_variance`, :func:`mse_true`,
    :func:`prmse`). Emits :class:`~core.metrics.notes.SampleSizeWarning` (never an error) when fewer than 1,000
    responses are double-scored (500 when the human-human correlation exceeds 0.65) or PRMSE > 1
    (Loukina et al. 2020, section 7). With an external ``rater_error_variance`` the count warning is skipped.

    Parameters
    ----------
    system, ratings, rater_error_variance : as :func:`prmse`

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     rec = true_score_evaluation([1, 2, 5], [[2, 3, 5]], rater_error_variance=0.5)
    >>> rec["N"], rec["N_single"], round(rec["prmse"], 6)
    (3, 3, 0.909091)
    """
    h = as_ratings(ratings)
    t = TrueScoreTotals.of(true_score_sums(h, system)[0].totals())
    values = {k: float(v) for k, v in finish_true_score(t, rater_error_variance).items()}
    rec: dict[str, float] = {
        "N": int(values["N"]),
        "N_raters": int(h.shape[1]),
        "N_single": int(values["N_single"]),
        "N_multiple": int(values["N_multiple"]),
        **{k: values[k] for k in ("rater_error_variance", "true_score_variance", "mse_true", "prmse")},
    }
    r = float("nan")
    if rater_error_variance is None and rec["N_multiple"] > 0:  # r of the first two ratings of each response
        two = h[(~np.isnan(h)).sum(axis=1) >= 2]
        pair = np.take_along_axis(two, np.argsort(np.isnan(two), axis=1, kind="stable")[:, :2], axis=1)
        r = quiet(pearson_r, pair[:, 0], pair[:, 1])
    for message in prmse_cautions(
        n_multiple=int(rec["N_multiple"]), r_hh=r, prmse=rec["prmse"], external=rater_error_variance is not None
    ):
        caution(message)
    return rec


def prmse_cautions(*, n_multiple: int, r_hh: float, prmse: float, external: bool) -> list[str]:
    """The sample-size cautions of PRMSE (Loukina et al. 2020, section 7), worded once for every caller.

    Fewer than 1,000 double-scored responses (500 when the human-human correlation exceeds 0.65) when V_e is
    estimated from the data (``external`` False), and PRMSE above 1.

    Examples
    --------
    >>> prmse_cautions(n_multiple=300, r_hh=0.8, prmse=0.9, external=False)  # doctest: +NORMALIZE_WHITESPACE
    ['PRMSE rests on 300 double-scored responses; at least 500 are recommended (Loukina et al. 2020) when human-human
    r > 0.65']
    """
    out = []
    if not external and n_multiple > 0:
        need = (
            MIN_DOUBLE_SCORED_HIGH_AGREEMENT if (np.isfinite(r_hh) and r_hh > HIGH_AGREEMENT_R) else MIN_DOUBLE_SCORED
        )
        if n_multiple < need:
            out.append(
                f"PRMSE rests on {n_multiple} double-scored responses; at least {need} are recommended "
                f"(Loukina et al. 2020)"
                + (" when human-human r > 0.65" if need == MIN_DOUBLE_SCORED_HIGH_AGREEMENT else "")
            )
    if np.isfinite(prmse) and prmse > 1:
        out.append(f"PRMSE is {prmse:.3f} > 1: the double-scored sample is too small to estimate rater error variance")
    return out
