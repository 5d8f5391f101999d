"""Moments of a pair of score vectors and the metrics that are smooth functions of them, as ``finish(totals)``.

The moment-based metrics (means, sds, Pearson's r, continuous QWK, SMD, MSE, R2, disattenuated r, DSM) are written
over sums of per-response terms (:mod:`core.metrics.estimates.sums`) so that the bootstrap evaluates them for all
resamples at once. Sums are taken on values centred at the sample mean, which keeps the moments accurate at millions of
responses. The public one-call functions are in :mod:`core.metrics.estimates.observed` and
:mod:`core.metrics.estimates.accuracy`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from core.metrics.estimates.sums import RowSums, nan_where

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
