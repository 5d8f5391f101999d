"""One comparison (human vs system, or human vs human) as sufficient statistics plus lazy finishers.

A :class:`PairSuite` holds the two score vectors and the responses compared; :attr:`PairSuite.sums` gives the
terms every observed metric needs (moments, exact/adjacent counts, the joint category table), for the sample or
every resample, and :meth:`PairSuite.finishers` turns their totals into metric values, with a leading batch axis
for the bootstrap (:mod:`core.metrics.estimates.sums`). Which scores each metric compares: exact/adjacent agreement and
every chance-corrected coefficient use the scores rounded half-to-even and clipped to the scale's categories
(:func:`round_to_categories`); correlations, QWK, SMD, MSE and R2 use the raw scores.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from easl_toolkit.core.metrics.data import Weights, as_pair, round_to_categories
from easl_toolkit.core.metrics.estimates.agreement_totals import agreement_tables_from_joint, finish_agreement
from easl_toolkit.core.metrics.estimates.association import kendall_taus, spearman_rho, spearman_rho_resampled
from easl_toolkit.core.metrics.estimates.kappa import kappa_from_table
from easl_toolkit.core.metrics.estimates.krippendorff import coincidence_delta, finish_alpha_from_coincidence
from easl_toolkit.core.metrics.estimates.sums import (
    RowSums,
    finish_mse,
    finish_pearson,
    finish_qwk,
    finish_r2,
    finish_sd,
    finish_smd,
    moments,
    nan_where,
    pair_moment_sums,
)
from easl_toolkit.core.metrics.notes import capture, caution, quiet, undefined
from easl_toolkit.core.metrics.registry import OBSERVED_KEYS, RANK_KEYS, REPORT_WEIGHTS, report_name

#: A zero-argument callable computing one metric from totals: an array (with the batch axis of the totals) or, for
#: the rank metrics, a float.
Finisher = Callable[[], NDArray[Any] | float]


@dataclass
class PairSuite:
    """Sufficient statistics and finishers of every observed metric for one pair of score vectors.

    ``a`` (human) and ``b`` (system or second human) are full-length; ``rows`` selects the responses compared.
    ``cats`` are the scale's categories (None: the categorical family is undefined).
    """

    prefix: str
    a: NDArray[Any]
    b: NDArray[Any]
    rows: NDArray[Any]
    n_total: int
    cats: NDArray[Any] | None
    smd_method: str
    shift: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        a, b = self.a[self.rows], self.b[self.rows]
        self.shift = {"ca": float(np.mean(a)) if a.size else 0.0, "cb": float(np.mean(b)) if b.size else 0.0}

    @functools.cached_property
    def sums(self) -> RowSums:
        """Per-response terms over all ``n_total`` responses (``sums.totals()``: the sample's totals)."""
        a, b, p = self.a[self.rows], self.b[self.rows], self.prefix
        sub, _ = pair_moment_sums(a, b, p)  # centred at the sample means, as self.shift
        if self.cats is not None and self.cats.size:
            q = self.cats.size
            ar, br = round_to_categories(a, self.cats), round_to_categories(b, self.cats)
            sub.add(p + "exact", (ar == br).astype(np.float64))
            sub.add(p + "adjacent", (np.abs(ar - br) <= 1.0).astype(np.float64))
            ia, ib = np.searchsorted(self.cats, ar), np.searchsorted(self.cats, br)
            sub.add_counts(p + "joint", np.arange(a.size), ia * q + ib, 1.0, q * q)
        return sub.embedded(self.rows, self.n_total)

    def finishers(self, t: dict[str, NDArray[Any]]) -> dict[str, Finisher]:
        """``key -> zero-argument callable`` computing the metric from totals ``t`` (batch-capable)."""
        p = self.prefix
        mo = moments(t, self.shift, p)
        f: dict[str, Finisher] = {
            "N": lambda: mo["n"],
            "h_mean": lambda: np.where(mo["n"] > 0, mo["mean_a"], np.nan),
            "h_sd": lambda: finish_sd(mo, "a"),
            "sys_mean": lambda: np.where(mo["n"] > 0, mo["mean_b"], np.nan),
            "sys_sd": lambda: finish_sd(mo, "b"),
            "corr": lambda: finish_pearson(mo),
            "qwk": lambda: finish_qwk(mo),
            "smd": lambda: finish_smd(mo, self.smd_method),
            "mse": lambda: finish_mse(mo),
            "rmse": lambda: np.sqrt(finish_mse(mo)),
            "r2": lambda: finish_r2(mo),
        }
        if self.cats is None or not self.cats.size:

            def none() -> NDArray[Any]:
                return np.full(
                    np.shape(mo["n"]),
                    undefined("no score categories: the scale needs categories (integer bounds or an explicit list)"),
                )

            f.update({k: none for k in OBSERVED_KEYS if k not in f and k not in RANK_KEYS})
            return f
        f.update(self._categorical(t, self.cats, mo["n"]))
        return f

    def _categorical(self, t: dict[str, NDArray[Any]], cats: NDArray[Any], n: NDArray[Any]) -> dict[str, Finisher]:
        """Exact and adjacent agreement, the kappa family, Gwet's AC, Brennan-Prediger, Scott's pi and
        Krippendorff's alpha from the joint category table of totals ``t``."""
        p = self.prefix
        q = cats.size
        f: dict[str, Finisher] = {}

        def pct(name: str) -> Finisher:
            def g() -> NDArray[Any]:
                with np.errstate(divide="ignore", invalid="ignore"):
                    v = 100.0 * t[p + name] / n
                return nan_where(n < 1, v, "agreement needs at least 1 response")

            return g

        f["exact_agr"] = pct("exact")
        f["adj_agr"] = pct("adjacent")

        def table() -> NDArray[Any]:
            return np.reshape(t[p + "joint"], np.shape(n) + (q, q))

        @functools.cache
        def ag() -> dict[str, NDArray[Any]]:
            return agreement_tables_from_joint(table())

        def kappa(w: Weights) -> Finisher:
            return lambda: kappa_from_table(table(), cats, None if w == "identity" else w)

        f.update({str(report_name("conger", w)): kappa(w) for w in REPORT_WEIGHTS})
        levels = ("nominal", "ordinal", "interval")
        return f | agreement_finishers(ag, cats, 2, "", REPORT_WEIGHTS, ("gwet", "bp", "fleiss"), levels)

    @functools.cached_property
    def _value_codes(self) -> list[NDArray[Any]]:
        """Each compared response's distinct-value id in ``a`` and ``b`` (full length; for tie counts)."""
        full: list[NDArray[Any]] = [np.zeros(self.a.size, dtype=np.int64) for _ in range(2)]
        for codes, x in zip(full, (self.a, self.b)):
            codes[self.rows] = np.unique(x[self.rows], return_inverse=True)[1].reshape(-1)
        return full

    def spearman_resampled(self, counts: NDArray[Any]) -> NDArray[Any]:
        """Spearman's rho on the compared responses for every resample of a chunk (counts (b, n_total))."""
        return spearman_rho_resampled(self.a[self.rows], self.b[self.rows], counts[:, self.rows])

    def ranks(self, index: NDArray[Any] | None = None) -> dict[str, Callable[[], float]]:
        """Spearman and Kendall on the compared responses of a resample (``index``: drawn rows) or the sample."""
        rows = self.rows if index is None else index[np.isin(index, self.rows)]
        a, b = self.a[rows], self.b[rows]

        @functools.cache
        def taus() -> tuple[float, float]:
            ties = None  # a resample: tie counts from the sample's value ids, no sort
            if index is not None and rows.size:
                codes = self._value_codes
                ties = (np.bincount(codes[0][rows]), np.bincount(codes[1][rows]))
            return kendall_taus(a, b, ties=ties)

        return {
            "spearman": lambda: spearman_rho(a, b),
            "kendall_tau_b": lambda: taus()[0],
            "kendall_tau_c": lambda: taus()[1],
        }


def agreement_finishers(
    t: Callable[[], dict[str, NDArray[Any]]],
    cats: NDArray[Any],
    n_raters: int,
    prefix: str,
    weightings: Iterable[Weights],
    coefficients: tuple[str, ...],
    levels: tuple[str, ...],
) -> dict[str, Finisher]:
    """Finishers of the chance-corrected ``coefficients`` under each weighting (named by
    :func:`~core.metrics.registry.report_name`) and of Krippendorff's alpha at each level, from the agreement totals
    ``t()`` (:func:`~core.metrics.estimates.agreement_totals.finish_agreement`, keys under ``prefix``)."""
    q = cats.size

    def coefficient(w: Weights, coef: str) -> Finisher:
        return lambda: finish_agreement(t(), cats, w, n_raters, prefix, (coef,))[coef]

    def alpha(level: str) -> Finisher:
        def finish() -> NDArray[Any]:
            coinc = np.reshape(t()[prefix + "coinc"], np.shape(t()[prefix + "n2"]) + (q, q))
            return finish_alpha_from_coincidence(coinc, coincidence_delta(cats, level))

        return finish

    f = {str(report_name(c, w)): coefficient(w, c) for w in weightings for c in coefficients}
    return f | {"krippendorff_alpha_" + level: alpha(level) for level in levels}


def memo(fn: Finisher) -> Finisher:
    """Compute once; later calls return the value and re-emit its reasons (so every key keeps them)."""
    cell: list[tuple[Any, list[str], list[str]]] = []

    def wrapped() -> Any:
        if not cell:
            cell.append(capture(fn))
        value, why, careful = cell[0]
        for reason in why:
            undefined(reason)
        for c in careful:
            caution(c)
        return value

    return wrapped


def point_values(finishers: dict[str, Finisher]) -> tuple[dict[str, float], dict[str, str], list[str]]:
    """Evaluate finishers once with reasons: (values, reasons, cautions)."""
    values: dict[str, float] = {}
    reasons: dict[str, str] = {}
    cautions: list[str] = []
    for key, fn in finishers.items():
        v, why, careful = capture(fn)
        values[key] = float(np.asarray(v, dtype=np.float64))
        if why and not np.isfinite(values[key]):
            reasons[key] = "; ".join(why)
        cautions.extend(c for c in careful if c not in cautions)
    return values, reasons, cautions


def batch_values(finishers: dict[str, Finisher]) -> dict[str, NDArray[Any]]:
    return {k: quiet(fn) for k, fn in finishers.items()}


def observed_metrics(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    categories: ArrayLike | None = None,
    smd_method: str = "unpooled",
    ranks: bool = True,
) -> dict[str, float]:
    """Every observed-score metric of one comparison at once (the ``observed`` keys of ``easl evaluate``).

    Moment metrics (N, means, sds, r, QWK, SMD, MSE, RMSE, R2) use the raw scores; with ``categories`` (the scale's
    category values) exact/adjacent agreement, the kappa family, Gwet's AC, Brennan-Prediger, Scott's pi and
    Krippendorff's alpha compare ``y_true`` with ``y_pred`` rounded half-to-even and clipped to the categories.
    One pass of sufficient statistics serves every metric (definitions: :mod:`core.metrics.estimates.observed`,
    :mod:`core.metrics.estimates.agreement`, :mod:`core.metrics.estimates.krippendorff`). ``ranks=False`` skips
    Spearman and Kendall (the only O(N log N) ones).
    Undefined values are NaN with an UndefinedMetricWarning naming the reason.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
    categories : array-like, optional
        The scale's category values (categorical metrics are NaN without them).
    smd_method : {"unpooled", "pooled"}, default "unpooled"
    ranks : bool, default True

    Returns
    -------
    dict name -> float, in :data:`core.metrics.registry.OBSERVED_KEYS` order.

    References
    ----------
    RSMTool documentation, "Evaluation metrics" (docs/design.md section 4.2); Gwet (2014); Krippendorff (2011).

    Examples
    --------
    >>> r = observed_metrics([1, 2, 3, 4, 3], [1.2, 2.4, 2.6, 3.9, 3.4], categories=[1, 2, 3, 4])
    >>> round(r["corr"], 6), r["conger_kappa"], r["exact_agr"]
    (0.953869, 1.0, 100.0)
    """

    a, b = as_pair(y_true, y_pred)
    cats = None if categories is None else np.asarray(categories, dtype=np.float64)
    suite = PairSuite("", a, b, np.arange(a.size), a.size, cats, smd_method)
    f = suite.finishers(suite.sums.totals())
    if ranks:
        f.update(suite.ranks())
    return {k: float(np.asarray(f[k]())) for k in OBSERVED_KEYS if k in f}
