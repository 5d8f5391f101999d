"""Benchmarking a chance-corrected coefficient on the Landis-Koch, Fleiss, Altman, Cicchetti-Sparrow and Regier
scales, with Gwet's probabilistic rule (Gwet 2014, ch. 6; irrCAC ``benchmark.py``).

The interval membership probability of a benchmark range (a, b] is
P(a < kappa <= b) = [Phi((kappa_hat - a) / se) - Phi((kappa_hat - b) / se)] / [Phi((kappa_hat + 1) / se) -
Phi((kappa_hat - 1) / se)] (normal, truncated to [-1, 1]); going down the scale from its best range, the
benchmark is the first range whose cumulative probability reaches 0.95.
"""

from __future__ import annotations

from typing import Literal, NamedTuple, get_args

import numpy as np
from scipy import stats

from core.metrics.data import check_option

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
