"""Sufficient statistics that are sums over responses, for one sample or many bootstrap resamples at once.

Most metrics here are smooth functions of sums over responses (moments, category counts, coincidence tables).
A :class:`RowSums` holds the per-response terms; :meth:`RowSums.totals` returns their sums, either for the sample
itself or, given a ``(B, n)`` matrix of resampling counts (how often each response was drawn in each of ``B``
bootstrap resamples), for all resamples at once (one matrix product for the dense terms, one ``bincount`` for the
category counts). A metric is then ``finish(totals)``, written once with a leading batch axis, so the point
estimate and the bootstrap share the same code. This is the standard plug-in view of the nonparametric bootstrap
(Efron & Tibshirani 1993, ch. 6): a resample is the original data with multinomial weights on the responses.

The moment-based metrics of a pair of score vectors (means, sds, Pearson's r, continuous QWK, SMD, MSE, R2,
disattenuated r, DSM) are here as ``finish(totals)`` over :func:`pair_moment_sums`; the sums are taken on values
centred at the sample mean, which keeps the moments accurate at millions of responses. The public one-call functions
are in :mod:`core.metrics.estimates.observed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from easl_toolkit.core.metrics.notes import undefined


@dataclass
class _Counts:
    rows: NDArray[Any]  # (m,) int64 response index of each entry
    cats: NDArray[Any]  # (m,) int64 cell index in [0, size)
    weights: NDArray[Any]  # (m,) float64 weight of each entry
    size: int


@dataclass
class RowSums:
    """Per-response terms whose sums are sufficient for a set of metrics, over ``n`` responses (rows)."""

    n: int
    _dense_names: list[str] = field(default_factory=list)
    _dense: list[NDArray[Any]] = field(default_factory=list)
    _counts: dict[str, _Counts] = field(default_factory=dict)
    _stacked: NDArray[Any] | None = field(default=None, repr=False)
    _grouped: list[tuple[NDArray[Any], dict[str, NDArray[Any]]]] = field(default_factory=list)

    def add_grouped(self, group: NDArray[Any], tables: dict[str, NDArray[Any]]) -> None:
        """Add terms that depend on the response only through its group (e.g. its rating pattern):
        ``totals[name] = sum_i w_i tables[name][group_i]``; ``group_i = -1`` adds nothing. A table of shape (G,)
        gives a scalar total, (G, size) a count table. Resampled totals cost O(B x n + B x G x size), however
        many entries a response has."""
        group = np.asarray(group, dtype=np.int64)
        if group.shape != (self.n,):
            raise ValueError(f"group has shape {group.shape}, expected ({self.n},)")
        self._grouped.append((group, {k: np.asarray(v, dtype=np.float64) for k, v in tables.items()}))

    def add(self, name: str, values: NDArray[Any]) -> None:
        """Add a dense term: ``totals[name] = sum_i w_i values_i``."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (self.n,):
            raise ValueError(f"term {name!r} has shape {values.shape}, expected ({self.n},)")
        self._dense_names.append(name)
        self._dense.append(values)

    def add_counts(
        self, name: str, rows: NDArray[Any], cats: NDArray[Any], weights: NDArray[Any] | float, size: int
    ) -> None:
        """Add a count table: ``totals[name][c] = sum over entries e with cats_e = c of w_{rows_e} weights_e``."""
        rows = np.asarray(rows, dtype=np.int64)
        cats = np.asarray(cats, dtype=np.int64)
        weights = np.broadcast_to(np.asarray(weights, dtype=np.float64), rows.shape)
        self._counts[name] = _Counts(rows, cats, np.ascontiguousarray(weights), int(size))

    def merge(self, other: RowSums) -> None:
        """Add every term of ``other`` (sums over the same responses)."""
        if other.n != self.n:
            raise ValueError("cannot merge sums over different responses")
        self._dense_names += other._dense_names
        self._dense += other._dense
        self._counts.update(other._counts)
        self._grouped += other._grouped

    def embedded(self, rows: NDArray[Any], n: int) -> RowSums:
        """The same terms placed at positions ``rows`` of a sample of ``n`` responses (0 elsewhere).

        Used for metrics defined on a subset (e.g. double-scored responses) inside a bootstrap over all responses.
        """
        rows = np.asarray(rows, dtype=np.int64)
        if rows.shape != (self.n,):
            raise ValueError("rows must give one position per response of these sums")
        if self.n == n and (n == 0 or (rows[0] == 0 and rows[-1] == n - 1)) and np.all(np.diff(rows) == 1):
            return self
        out = RowSums(n)
        for name, values in zip(self._dense_names, self._dense):
            full = np.zeros(n)
            full[rows] = values
            out.add(name, full)
        for name, c in self._counts.items():
            out._counts[name] = _Counts(rows[c.rows], c.cats, c.weights, c.size)
        for group, tables in self._grouped:
            full = np.full(n, -1, dtype=np.int64)
            full[rows] = group
            out._grouped.append((full, tables))
        return out

    def per_row(self) -> dict[str, NDArray[Any]]:
        """Every term of each response separately: ``(n,)`` dense terms, ``(n, size)`` count tables."""
        out: dict[str, NDArray[Any]] = dict(zip(self._dense_names, self._dense))
        for name, c in self._counts.items():
            out[name] = np.bincount(c.rows * c.size + c.cats, weights=c.weights, minlength=self.n * c.size).reshape(
                self.n, c.size
            )
        return out

    def totals(self, counts: NDArray[Any] | None = None) -> dict[str, NDArray[Any]]:
        """Sums of every term, ``name -> array``: of shape ``()`` / ``(size,)`` for the sample itself (``counts``
        None), ``(B,)`` / ``(B, size)`` for the resampling counts ``counts`` of shape ``(B, n)``."""
        out: dict[str, NDArray[Any]] = {}
        if self._dense and counts is None:
            for name, values in zip(self._dense_names, self._dense):
                out[name] = np.asarray(values.sum())
        elif self._dense:
            if self._stacked is None or self._stacked.shape[1] != len(self._dense):
                self._stacked = np.stack(self._dense, axis=1)
            sums = counts @ self._stacked
            for j, name in enumerate(self._dense_names):
                out[name] = sums[..., j]
        for name, c in self._counts.items():
            if counts is None:
                out[name] = np.bincount(c.cats, weights=c.weights, minlength=c.size)[: c.size]
            else:
                b = counts.shape[0]
                w = counts[:, c.rows] * c.weights
                flat = (np.arange(b, dtype=np.int64)[:, None] * c.size + c.cats[None, :]).ravel()
                out[name] = np.bincount(flat, weights=w.ravel(), minlength=b * c.size).reshape(b, c.size)
        for group, tables in self._grouped:
            g = int(group.max(initial=-1)) + 1
            ok = group >= 0
            if counts is None:
                agg: NDArray[Any] = np.bincount(group[ok], minlength=g).astype(np.float64)
            else:
                b = counts.shape[0]
                flat = (np.arange(b, dtype=np.int64)[:, None] * g + group[ok][None, :]).ravel()
                agg = np.bincount(flat, weights=counts[:, ok].ravel(), minlength=b * g).reshape(b, g)
            for name, table in tables.items():
                out[name] = np.asarray(agg @ table[:g])
        return out


def nan_where(bad: NDArray[Any] | bool, value: NDArray[Any], reason: str) -> NDArray[Any]:
    """``value`` with NaN where ``bad``; emits the reason (UndefinedMetricWarning) if any element is bad."""
    bad = np.asarray(bad, dtype=bool)
    if bad.any():
        undefined(reason, stacklevel=4)
        value = np.where(bad, np.nan, value)
    return value


def as_float(value: NDArray[Any]) -> float | NDArray[Any]:
    """A Python float for a 0-d result, the array otherwise."""
    value = np.asarray(value, dtype=np.float64)
    return float(value) if value.ndim == 0 else value


_REL_CONSTANT = 1e-12  # a standard deviation below this fraction of the score magnitude counts as zero


def pair_moment_sums(a: NDArray[Any], b: NDArray[Any], prefix: str = "") -> tuple[RowSums, dict[str, float]]:
    """Per-response terms for the moments of (a, b): 1, a-ca, b-cb, (a-ca)^2, (b-cb)^2, (a-ca)(b-cb), (a-b)^2.

    ``ca`` and ``cb`` (the sample means) are returned in the second value and must be passed to the finishers.
    """
    ca = float(np.mean(a)) if a.size else 0.0
    cb = float(np.mean(b)) if b.size else 0.0
    da, db = a - ca, b - cb
    s = RowSums(a.size)
    s.add(prefix + "n", np.ones(a.size))
    s.add(prefix + "sa", da)
    s.add(prefix + "sb", db)
    s.add(prefix + "saa", da * da)
    s.add(prefix + "sbb", db * db)
    s.add(prefix + "sab", da * db)
    s.add(prefix + "sdd", (a - b) ** 2)
    return s, {"ca": ca, "cb": cb}


def moments(t: dict[str, NDArray[Any]], shift: dict[str, float], prefix: str = "") -> dict[str, NDArray[Any]]:
    """Means, ddof=0 variances and covariance (and constancy flags) from :func:`pair_moment_sums` totals."""
    n = np.asarray(t[prefix + "n"], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ma = t[prefix + "sa"] / n
        mb = t[prefix + "sb"] / n
        va = np.maximum(t[prefix + "saa"] / n - ma * ma, 0.0)
        vb = np.maximum(t[prefix + "sbb"] / n - mb * mb, 0.0)
        cov = t[prefix + "sab"] / n - ma * mb
    mean_a = shift["ca"] + ma
    mean_b = shift["cb"] + mb
    const_a = np.sqrt(va) <= _REL_CONSTANT * np.maximum(1.0, np.abs(mean_a))
    const_b = np.sqrt(vb) <= _REL_CONSTANT * np.maximum(1.0, np.abs(mean_b))
    va = np.where(const_a, 0.0, va)
    vb = np.where(const_b, 0.0, vb)
    cov = np.where(const_a | const_b, 0.0, cov)
    return {
        "n": n,
        "mean_a": mean_a,
        "mean_b": mean_b,
        "va": va,
        "vb": vb,
        "cov": cov,
        "const_a": const_a,
        "const_b": const_b,
        "sdd": t[prefix + "sdd"],
    }


def _ddof1(var0: NDArray[Any], n: NDArray[Any]) -> NDArray[Any]:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 1, var0 * n / (n - 1), np.nan)


def finish_sd(mo: dict[str, NDArray[Any]], which: str) -> NDArray[Any]:
    """Standard deviation with ddof=1 (NaN for N < 2)."""
    n = mo["n"]
    v = _ddof1(mo["va" if which == "a" else "vb"], n)
    return nan_where(n < 2, np.sqrt(v), "a standard deviation needs at least 2 responses")


def finish_pearson(mo: dict[str, NDArray[Any]]) -> NDArray[Any]:
    """Pearson r = Cov(a, b) / (sd(a) sd(b)); NaN for N < 2 or a constant vector (RSMTool returns None)."""
    n = mo["n"]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.clip(mo["cov"] / np.sqrt(mo["va"] * mo["vb"]), -1.0, 1.0)
    r = nan_where(n < 2, r, "a correlation needs at least 2 responses")
    return nan_where((n >= 2) & (mo["const_a"] | mo["const_b"]), r, "a correlation is undefined for constant scores")


def finish_qwk(mo: dict[str, NDArray[Any]]) -> NDArray[Any]:
    """Continuous QWK = 2 Cov / (Var(a) + Var(b) + (mean b - mean a)^2), ddof=0 (Haberman 2019)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        den = mo["va"] + mo["vb"] + (mo["mean_b"] - mo["mean_a"]) ** 2
        q = 2.0 * mo["cov"] / den
    q = nan_where(mo["n"] < 1, q, "QWK needs at least 1 response")
    return nan_where((mo["n"] >= 1) & (den <= 0), q, "QWK is undefined when both score vectors are the same constant")


def finish_smd(mo: dict[str, NDArray[Any]], method: str = "unpooled") -> NDArray[Any]:
    """SMD = (mean b - mean a) / sd, sd = sd(a) (unpooled) or sqrt((var a + var b)/2) (pooled), ddof=1."""
    n = mo["n"]
    va, vb = _ddof1(mo["va"], n), _ddof1(mo["vb"], n)
    if method == "unpooled":
        sd, zero = np.sqrt(va), mo["const_a"]
    elif method == "pooled":
        sd, zero = np.sqrt((va + vb) / 2.0), mo["const_a"] & mo["const_b"]
    else:
        raise ValueError(f"method must be 'unpooled' or 'pooled', got {method!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        d = (mo["mean_b"] - mo["mean_a"]) / sd
    d = nan_where(n < 2, d, "SMD needs at least 2 responses")
    return nan_where((n >= 2) & zero, d, "SMD is undefined when the human scores are constant")


def finish_mse(mo: dict[str, NDArray[Any]]) -> NDArray[Any]:
    """MSE = mean((a - b)^2)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        m = mo["sdd"] / mo["n"]
    return nan_where(mo["n"] < 1, m, "MSE needs at least 1 response")


def finish_r2(mo: dict[str, NDArray[Any]]) -> NDArray[Any]:
    """R2 = 1 - sum (a - b)^2 / sum (a - mean a)^2 (sklearn ``r2_score``); NaN for N < 2 or constant a."""
    n = mo["n"]
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = 1.0 - mo["sdd"] / (n * mo["va"])
    r2 = nan_where(n < 2, r2, "R2 needs at least 2 responses")
    return nan_where((n >= 2) & mo["const_a"], r2, "R2 is undefined when the human scores are constant")


def finish_disattenuated(r_hm: ArrayLike, r_hh: ArrayLike) -> NDArray[Any]:
    """Disattenuated correlation r(H, M) / sqrt(r(H1, H2)) (batch-capable; NaN with a reason unless r_hh > 0).

    Same definition as :func:`disattenuated_correlation` (RSMTool ``correlations``), with the reason recorded.
    """
    r_hm = np.asarray(r_hm, dtype=np.float64)
    r_hh = np.asarray(r_hh, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = r_hm / np.sqrt(np.where(r_hh > 0, r_hh, np.nan))
    return nan_where(
        ~(r_hh > 0) | np.isnan(r_hm),
        out,
        "the disattenuated correlation needs a defined human-system r and a positive human-human r",
    )


def finish_dsm(group: dict[str, NDArray[Any]], whole: dict[str, NDArray[Any]]) -> NDArray[Any]:
    """DSM of a subgroup from :func:`moments` of the group and of the whole set (batch-capable).

    DSM = (mean_g M - mean M) / sd M - (mean_g H - mean H) / sd H with the whole evaluation set's means and sds
    (ddof=1), i.e. the group mean of z(M) - z(H) (RSMTool ``difference_of_standardized_means``; same definition
    as :func:`difference_of_standardized_means`).
    """
    n = whole["n"]
    with np.errstate(divide="ignore", invalid="ignore"):
        sd_h = np.sqrt(whole["va"] * n / (n - 1.0))
        sd_m = np.sqrt(whole["vb"] * n / (n - 1.0))
        value = (group["mean_b"] - whole["mean_b"]) / sd_m - (group["mean_a"] - whole["mean_a"]) / sd_h
    value = nan_where(group["n"] < 1, value, "DSM needs at least 1 response in the group")
    return nan_where(
        (group["n"] >= 1) & ((n < 2) | whole["const_a"] | whole["const_b"]),
        value,
        "DSM is undefined when the human or system scores of the whole set are constant",
    )
