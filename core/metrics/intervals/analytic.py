"""Analytic confidence intervals (the bootstrap's: :mod:`core.metrics.bootstrap`), each saying how it was made
(:data:`IntervalMethod`): Fisher's z for Pearson's r, tanh(atanh(r) -/+ z_(1-a/2) / sqrt(n - 3)) (Fisher 1921); Wald
intervals estimate -/+ z_(1-a/2) se, or estimate -/+ t_(1-a/2, n-1) se with the upper bound capped at 1 (the largest
value a chance-corrected coefficient can take), as irrCAC reports them (Gwet 2014, section 5.5; irrCAC ``raw.py``).
``confidence`` is the two-sided level of every interval (default 0.95).

:func:`benchmark` places a chance-corrected coefficient on the Landis-Koch, Fleiss, Altman, Cicchetti-Sparrow or
Regier scale by Gwet's probabilistic rule (Gwet 2014, ch. 6; irrCAC ``benchmark.py``): the interval membership
probability of a benchmark range (a, b] is P(a < kappa <= b) = [Phi((kappa_hat - a) / se) - Phi((kappa_hat - b) /
se)] / [Phi((kappa_hat + 1) / se) - Phi((kappa_hat - 1) / se)] (normal, truncated to [-1, 1]); going down the
scale from its best range, the benchmark is the first range whose cumulative probability reaches 0.95.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, get_args

import numpy as np
from scipy import stats

from easl_toolkit.core.metrics.data import check_option

#: How an interval was computed.
IntervalMethod = Literal["bootstrap percentile", "Fisher z", "normal", "Student t, capped at 1"]


class Interval(NamedTuple):
    """A confidence interval ``[low, high]`` (NaN bounds when undefined; a NamedTuple: ``low, high =
    interval[:2]`` works) and the ``method`` that computed it (one of :data:`IntervalMethod`).

    References
    ----------
    Efron & Tibshirani (1993), ch. 13 (percentile intervals); Gwet (2014), section 5.5 (t-based Wald intervals).

    Examples
    --------
    >>> Interval(0.2, 0.6, "Fisher z").is_defined
    True
    """

    low: float
    high: float
    method: str = "bootstrap percentile"

    @property
    def is_defined(self) -> bool:
        """Both bounds are finite."""
        return bool(np.isfinite(self.low) and np.isfinite(self.high))


def fisher_z_ci(r: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Confidence interval of Pearson's r by Fisher's z transformation.

    .. math:: \\tanh(\\operatorname{atanh}(r) \\mp z_{1-\\alpha/2} / \\sqrt{n - 3})

    Parameters
    ----------
    r : float
        Pearson's correlation.
    n : int
        Number of pairs.

    Returns
    -------
    (low, high) : tuple of float
        NaN for n <= 3 or an undefined r; r = +/-1 gives a degenerate interval at r.

    References
    ----------
    Fisher, R. A. (1921). On the "probable error" of a coefficient of correlation deduced from a small sample.
    Metron 1, 3-32.

    Examples
    --------
    >>> [round(x, 6) for x in fisher_z_ci(0.5, 50)]
    [0.257488, 0.683256]
    """
    if not np.isfinite(r) or n <= 3:
        return float("nan"), float("nan")
    if abs(r) >= 1.0:
        return float(r), float(r)
    z = np.arctanh(r)
    half = stats.norm.ppf(0.5 + confidence / 2.0) / np.sqrt(n - 3.0)
    return float(np.tanh(z - half)), float(np.tanh(z + half))


def normal_ci(estimate: float, se: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wald interval with the normal quantile: ``estimate -/+ z_(1-a/2) se``.

    Returns
    -------
    (low, high) : tuple of float
        NaN when the estimate or the standard error is undefined.

    References
    ----------
    Wald, A. (1943). Tests of statistical hypotheses concerning several parameters when the number of observations
    is large. Transactions of the AMS 54, 426-482.

    Examples
    --------
    >>> [round(x, 6) for x in normal_ci(0.5, 0.1)]
    [0.304004, 0.695996]
    """
    if not (np.isfinite(estimate) and np.isfinite(se)):
        return float("nan"), float("nan")
    half = stats.norm.ppf(0.5 + confidence / 2.0) * se
    return float(estimate - half), float(estimate + half)


def student_t_ci(
    estimate: float, se: float, n: float, confidence: float = 0.95, *, cap: float | None = 1.0
) -> tuple[float, float]:
    """Wald interval with Student's t on ``n - 1`` degrees of freedom, the upper bound capped at ``cap``.

    .. math:: \\hat\\kappa \\mp t_{1-\\alpha/2,\\,n-1}\\,\\mathrm{se}, \\quad \\text{high} = \\min(\\text{high}, 1)

    This is how Gwet (2014, section 5.5) and irrCAC report the intervals of the chance-corrected coefficients
    (``n`` = the number of rated subjects).

    Parameters
    ----------
    estimate, se : float
    n : int
        Number of subjects (degrees of freedom n - 1).
    cap : float or None, default 1.0
        Upper cap of the interval (None: no cap). The lower bound is not capped (irrCAC does not).

    Returns
    -------
    (low, high) : tuple of float
        NaN for n < 2 or an undefined estimate or standard error.

    References
    ----------
    Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed., section 5.5.

    Examples
    --------
    >>> [round(x, 6) for x in student_t_ci(0.8, 0.15, 12)]
    [0.469852, 1.0]
    """
    if not (np.isfinite(estimate) and np.isfinite(se)) or n < 2:
        return float("nan"), float("nan")
    half = stats.t.ppf(0.5 + confidence / 2.0, n - 1) * se
    low, high = float(estimate - half), float(estimate + half)
    if cap is not None:
        high = min(high, cap)
    return low, high


def student_t_p_value(estimate: float, se: float, n: float) -> float:
    """Two-sided p-value of H0: coefficient = 0, ``2 (1 - F_t(|estimate / se|; n - 1))`` (irrCAC, Gwet 2014 5.5).

    Examples
    --------
    >>> round(student_t_p_value(0.5, 0.2, 12), 6)
    0.029506
    """
    if not (np.isfinite(estimate) and np.isfinite(se)) or n < 2 or se <= 0:
        return float("nan")
    return float(2.0 * stats.t.sf(abs(estimate / se), n - 1))


class Analytic(NamedTuple):
    """A closed-form standard error, confidence interval and two-sided p-value (H0: the coefficient is 0).

    ``se`` is NaN where the interval is not a Wald interval (Fisher's z for r).
    """

    se: float
    low: float
    high: float
    p_value: float
    method: str

    def to_json(self) -> dict[str, Any]:
        ci = [json_number(self.low), json_number(self.high)]
        return {"se": json_number(self.se), "ci": ci, "p_value": json_number(self.p_value), "method": self.method}


def json_number(x: float) -> float | None:
    """``x`` as a float, ``None`` (JSON ``null``) when it is not finite."""
    return float(x) if np.isfinite(x) else None


#: How the chance-corrected coefficients' analytic intervals are made (Gwet 2014, section 5.5; irrCAC).
T_METHOD = "linearised se (Gwet 2014), Student t with n - 1 df, upper bound capped at 1 (irrCAC)"
#: How Pearson's r's analytic interval is made (scipy ``PearsonRResult.confidence_interval``, ``pearsonr``).
FISHER_METHOD = "Fisher z with the normal quantile; p-value from t with n - 2 df (scipy.stats.pearsonr)"


def pearson_analytic(r: float, n: int, confidence: float = 0.95) -> Analytic:
    """Fisher-z interval of r and the p-value of scipy's ``pearsonr`` (t = r sqrt((n - 2) / (1 - r^2)), n - 2 df).

    Examples
    --------
    >>> a = pearson_analytic(0.5, 50)
    >>> [round(x, 6) for x in (a.low, a.high, a.p_value)]
    [0.257488, 0.683256, 0.000218]
    """
    low, high = fisher_z_ci(r, n, confidence)
    p = float("nan")
    if np.isfinite(r) and n > 2:
        if abs(r) >= 1.0:
            p = 0.0
        else:
            t = r * np.sqrt((n - 2.0) / (1.0 - r * r))
            p = float(2.0 * stats.t.sf(abs(t), n - 2))
    return Analytic(float("nan"), low, high, p, FISHER_METHOD)


BenchmarkScale = Literal["landis_koch", "fleiss", "altman", "cicchetti_sparrow", "regier"]
SCALES: tuple[str, ...] = get_args(BenchmarkScale)

#: label -> lower bound, best range first; each range's upper bound is the lower bound of the range above (1 for the
#: best) (irrCAC ``Benchmark``; Landis & Koch 1977, Fleiss 1981, Altman 1991, Cicchetti & Sparrow 1981, Regier et
#: al. 2013).
_RANGES = {
    "landis_koch": {
        "Almost Perfect": 0.8,
        "Substantial": 0.6,
        "Moderate": 0.4,
        "Fair": 0.2,
        "Slight": 0.0,
        "Poor": -1.0,
    },
    "fleiss": {"Excellent": 0.75, "Intermediate to Good": 0.4, "Poor": -1.0},
    "altman": {"Very Good": 0.8, "Good": 0.6, "Moderate": 0.4, "Fair": 0.2, "Poor": -1.0},
    "cicchetti_sparrow": {"Excellent": 0.75, "Good": 0.6, "Fair": 0.4, "Poor": 0.0},
    "regier": {"Excellent": 0.8, "Very Good": 0.6, "Good": 0.4, "Questionable": 0.2, "Unacceptable": 0.0},
}


class Benchmark(NamedTuple):
    """A coefficient placed on a benchmark scale."""

    scale: str
    ranges: tuple[tuple[float, float], ...]
    labels: tuple[str, ...]
    cumulative_probability: tuple[float, ...]
    label: str | None  # Gwet's probabilistic benchmark (first range with cumulative probability >= 0.95)
    naive: str | None  # the range the point estimate falls in


def benchmark(
    coefficient: float, se: float, *, scale: BenchmarkScale = "landis_koch", threshold: float = 0.95
) -> Benchmark:
    """Gwet's probabilistic benchmark of a coefficient with standard error ``se`` on a named scale.

    Parameters
    ----------
    coefficient, se : float
    scale : {"landis_koch", "fleiss", "altman", "cicchetti_sparrow", "regier"}, default "landis_koch"
    threshold : float, default 0.95

    Returns
    -------
    Benchmark
        The cumulative membership probabilities (unrounded; irrCAC rounds them to 5 digits), the benchmark label
        and the naive one. ``label`` is None when the coefficient or its se is undefined.

    References
    ----------
    Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed., chapter 6. irrCAC ``benchmark.py``.

    Examples
    --------
    irrCAC's example, kappa 0.67 with se 0.15 on the Altman scale:

    >>> b = benchmark(0.67, 0.15, scale="altman")
    >>> [round(p, 5) for p in b.cumulative_probability], b.label, b.naive
    ([0.18168, 0.67511, 0.96356, 0.99912, 1.0], 'Moderate', 'Good')
    """
    check_option("scale", scale, SCALES)
    labels, lb = list(_RANGES[scale]), list(_RANGES[scale].values())
    ranges = tuple(zip(lb, [1.0, *lb[:-1]]))
    if not (np.isfinite(coefficient) and np.isfinite(se) and se > 0):
        return Benchmark(scale, ranges, tuple(labels), tuple(float("nan") for _ in lb), None, None)
    truncation = stats.norm.cdf((coefficient + 1) / se) - stats.norm.cdf((coefficient - 1) / se)
    mass = [
        (stats.norm.cdf((coefficient - a) / se) - stats.norm.cdf((coefficient - b) / se)) / truncation
        for a, b in ranges
    ]
    cumulative = tuple(float(x) for x in np.cumsum(mass))
    label = next((lab for lab, c in zip(labels, cumulative) if c >= threshold), labels[-1])
    naive = next(
        (lab for (a, b), lab in zip(ranges, labels) if a < coefficient <= b or (b == 1.0 and coefficient == 1.0)),
        labels[-1],
    )
    return Benchmark(scale, ranges, tuple(labels), cumulative, label, naive)
