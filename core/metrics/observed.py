"""Observed-score accuracy metrics with RSMTool semantics (metrics.md section 2; RSMTool "Evaluation Metrics").

Notation: ``y_true`` is the human score H, ``y_pred`` the system score M, N the number of responses. Functions take
two equal-length finite vectors and return a float; an undefined value is NaN with an
:class:`~core.metrics.notes.UndefinedMetricWarning` giving the reason.

The moment-based metrics are written as ``finish(totals)`` over sums of per-response terms
(:mod:`core.metrics.sums`) so that the bootstrap evaluates them for all resamples at once. Sums are taken on
values centred at the sample mean, which keeps the moments accurate at millions of responses.
"""
from __future__ import annotations

import numpy as np

from core.metrics.data import as_pair, as_vector
from core.metrics.notes import undefined
from core.metrics.sums import RowSums, as_float, nan_where

_REL_CONSTANT = 1e-12   # a standard deviation below this fraction of the score magnitude counts as zero


# ---------------------------------------------------------------------------------------------------------------
# Moments of a pair of vectors: the sufficient statistics of means, sds, r, QWK, SMD, MSE and R2.

def pair_moment_sums(a: np.ndarray, b: np.ndarray, prefix: str = "") -> tuple[RowSums, dict]:
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


def moments(t: dict, shift: dict, prefix: str = "") -> dict:
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
    return {"n": n, "mean_a": mean_a, "mean_b": mean_b, "va": va, "vb": vb, "cov": cov, "const_a": const_a,
            "const_b": const_b, "sdd": t[prefix + "sdd"]}


def _ddof1(var0: np.ndarray, n: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 1, var0 * n / (n - 1), np.nan)


def finish_sd(mo: dict, which: str) -> np.ndarray:
    """Standard deviation with ddof=1 (NaN for N < 2)."""
    n = mo["n"]
    v = _ddof1(mo["va" if which == "a" else "vb"], n)
    return nan_where(n < 2, np.sqrt(v), "a standard deviation needs at least 2 responses")


def finish_pearson(mo: dict) -> np.ndarray:
    """Pearson r = Cov(a, b) / (sd(a) sd(b)); NaN for N < 2 or a constant vector (RSMTool returns None)."""
    n = mo["n"]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.clip(mo["cov"] / np.sqrt(mo["va"] * mo["vb"]), -1.0, 1.0)
    r = nan_where(n < 2, r, "a correlation needs at least 2 responses")
    return nan_where((n >= 2) & (mo["const_a"] | mo["const_b"]), r, "a correlation is undefined for constant scores")


def finish_qwk(mo: dict) -> np.ndarray:
    """Continuous QWK = 2 Cov / (Var(a) + Var(b) + (mean b - mean a)^2), ddof=0 (Haberman 2019)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        den = mo["va"] + mo["vb"] + (mo["mean_b"] - mo["mean_a"]) ** 2
        q = 2.0 * mo["cov"] / den
    q = nan_where(mo["n"] < 1, q, "QWK needs at least 1 response")
    return nan_where((mo["n"] >= 1) & (den <= 0), q, "QWK is undefined when both score vectors are the same constant")


def finish_smd(mo: dict, method: str = "unpooled") -> np.ndarray:
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


def finish_mse(mo: dict) -> np.ndarray:
    """MSE = mean((a - b)^2)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        m = mo["sdd"] / mo["n"]
    return nan_where(mo["n"] < 1, m, "MSE needs at least 1 response")


def finish_r2(mo: dict) -> np.ndarray:
    """R2 = 1 - sum (a - b)^2 / sum (a - mean a)^2 (sklearn ``r2_score``); NaN for N < 2 or constant a."""
    n = mo["n"]
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = 1.0 - mo["sdd"] / (n * mo["va"])
    r2 = nan_where(n < 2, r2, "R2 needs at least 2 responses")
    return nan_where((n >= 2) & mo["const_a"], r2, "R2 is undefined when the human scores are constant")


def _moments_of(y_true, y_pred) -> dict:
    a, b = as_pair(y_true, y_pred)
    s, shift = pair_moment_sums(a, b)
    return moments(s.totals(), shift)


# ---------------------------------------------------------------------------------------------------------------
# Public scalar functions.

def pearson_r(y_true, y_pred) -> float:
    """Pearson correlation coefficient.

    r = sum (H - mean H)(M - mean M) / sqrt(sum (H - mean H)^2 sum (M - mean M)^2)
    (RSMTool "Pearson Correlation coefficient"; ``scipy.stats.pearsonr``). NaN if N < 2 or a vector is constant.
    """
    return as_float(finish_pearson(_moments_of(y_true, y_pred)))


def quadratic_weighted_kappa(y_true, y_pred) -> float:
    """Quadratic weighted kappa for continuous scores (RSMTool ``quadratic_weighted_kappa``, ddof=0).

    QWK = 2 Cov(M, H) / (Var(H) + Var(M) + (mean M - mean H)^2), population moments (Haberman 2019). On integer
    scores it equals Cohen's kappa with quadratic weights.
    """
    return as_float(finish_qwk(_moments_of(y_true, y_pred)))


def standardized_mean_difference(y_true, y_pred, method: str = "unpooled", ddof: int = 1) -> float:
    """Standardized mean difference (RSMTool ``standardized_mean_difference``).

    unpooled: SMD = (mean M - mean H) / sd(H); pooled: SMD = (mean M - mean H) / sqrt((sd(H)^2 + sd(M)^2) / 2),
    standard deviations with ``ddof`` (1 in RSMTool reports). Human-system SMD is unpooled, human-human pooled.
    """
    a, b = as_pair(y_true, y_pred)
    if ddof not in (0, 1):
        raise ValueError("ddof must be 0 or 1")
    mo = moments(pair_moment_sums(a, b)[0].totals(), {"ca": float(np.mean(a)) if a.size else 0.0,
                                                        "cb": float(np.mean(b)) if b.size else 0.0})
    if ddof == 0:
        n = mo["n"]
        mo = dict(mo, va=mo["va"] * (n - 1) / n, vb=mo["vb"] * (n - 1) / n)   # cancels the ddof=1 scaling
    return as_float(finish_smd(mo, method))


def mean_squared_error(y_true, y_pred) -> float:
    """MSE(H|M) = (1/N) sum (H_i - M_i)^2 (RSMTool; ``sklearn.metrics.mean_squared_error``)."""
    a, b = as_pair(y_true, y_pred)
    if a.size == 0:
        return undefined("MSE needs at least 1 response")
    return float(np.mean((a - b) ** 2))


def root_mean_squared_error(y_true, y_pred) -> float:
    """RMSE = sqrt(MSE(H|M))."""
    return float(np.sqrt(mean_squared_error(y_true, y_pred)))


def r2_score(y_true, y_pred) -> float:
    """R2 = 1 - sum (H - M)^2 / sum (H - mean H)^2 (``sklearn.metrics.r2_score``, as RSMTool).

    NaN for N < 2 (RSMTool returns None) and for constant human scores (sklearn returns 0 or 1 there; we say why
    instead, a documented difference).
    """
    return as_float(finish_r2(_moments_of(y_true, y_pred)))


def agreement(y_true, y_pred, tolerance: float = 0) -> float:
    """Percent agreement: 100 * (1/N) sum 1[|H_i - M_i| <= tolerance] (RSMTool ``agreement``).

    ``tolerance`` 0 gives exact agreement, 1 exact + adjacent. Apply to rounded scores.
    """
    a, b = as_pair(y_true, y_pred)
    if a.size == 0:
        return undefined("agreement needs at least 1 response")
    return float(100.0 * np.mean(np.abs(a - b) <= tolerance))


def exact_agreement(y_true, y_pred) -> float:
    """Percent exact agreement, ``agreement(tolerance=0)``."""
    return agreement(y_true, y_pred, 0)


def adjacent_agreement(y_true, y_pred) -> float:
    """Percent exact + adjacent agreement, ``agreement(tolerance=1)``."""
    return agreement(y_true, y_pred, 1)


def difference_of_standardized_means(y_true, y_pred, population_y_true_mean=None, population_y_pred_mean=None,
                                     population_y_true_sd=None, population_y_pred_sd=None, ddof: int = 1) -> float:
    """DSM = mean_i [ (M_i - mean_M) / sd_M - (H_i - mean_H) / sd_H ] (RSMTool ``difference_of_standardized_means``).

    The population means and sds are those of the WHOLE evaluation set when evaluating a subgroup; by default they
    are computed from the given vectors (sds with ``ddof``). NaN if either sd is ~0 or the vectors are empty.
    """
    a, b = as_pair(y_true, y_pred)
    if a.size == 0:
        return undefined("DSM needs at least 1 response")
    mh = float(np.mean(a)) if population_y_true_mean is None else float(population_y_true_mean)
    mm = float(np.mean(b)) if population_y_pred_mean is None else float(population_y_pred_mean)
    if population_y_true_sd is None or population_y_pred_sd is None:
        if a.size <= ddof:
            return undefined("DSM needs more responses than ddof to estimate standard deviations")
    sh = float(np.std(a, ddof=ddof)) if population_y_true_sd is None else float(population_y_true_sd)
    sm = float(np.std(b, ddof=ddof)) if population_y_pred_sd is None else float(population_y_pred_sd)
    if sh <= _REL_CONSTANT * max(1.0, abs(mh)) or sm <= _REL_CONSTANT * max(1.0, abs(mm)):
        return undefined("DSM is undefined when the human or system scores are constant")
    return float(np.mean((b - mm) / sm) - np.mean((a - mh) / sh))


def disattenuated_correlation(human_system_r, human_human_r):
    """Disattenuated correlation r(H, M) / sqrt(r(H1, H2)) (RSMTool ``compute_disattenuated_correlations``).

    NaN where r(H1, H2) < 0 (or either is NaN). Accepts scalars or arrays (element-wise).
    """
    hm = np.asarray(human_system_r, dtype=np.float64)
    hh = np.asarray(human_human_r, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = hm / np.sqrt(np.where(hh >= 0, hh, np.nan))
    out = nan_where(np.isnan(hh) | np.isnan(hm) | (hh < 0) | (hh == 0), out,
                    "the disattenuated correlation needs a positive human-human correlation")
    return as_float(out)


def degradation(human_system: dict, human_human: dict) -> dict:
    """Degradation: each human-system metric minus the same human-human metric (RSMTool ``degradation`` table).

    Returns ``{key: human_system[key] - human_human[key]}`` for the keys both share (NaN propagates).
    """
    return {k: float(np.float64(human_system[k]) - np.float64(human_human[k]))
            for k in human_system if k in human_human and k != "N"}


# ---------------------------------------------------------------------------------------------------------------
# Cohen's kappa (SKLL semantics).

def _kappa_weights(cats: np.ndarray, weights: str | None, allow_off_by_one: bool = False) -> np.ndarray:
    """Disagreement weights over category values: unweighted 1[c != k], linear |c - k|, quadratic (c - k)^2."""
    d = np.abs(cats[:, None] - cats[None, :])
    if allow_off_by_one:
        d = np.maximum(d - 1.0, 0.0)
    if weights is None or weights == "identity":
        return (d > 0).astype(np.float64)
    if weights == "linear":
        return d
    if weights == "quadratic":
        return d * d
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")


def kappa_from_table(table: np.ndarray, cats: np.ndarray, weights: str | None = None,
                     allow_off_by_one: bool = False) -> np.ndarray:
    """Cohen's kappa from joint counts ``table[..., k, l]`` (human k, system l) over category values ``cats``.

    kappa = 1 - sum w_kl O_kl / sum w_kl E_kl, E_kl = n_k+ n_+l / N, with disagreement weights w (SKLL
    ``kappa``). If only one category is used by both raters, or every weight is zero, SKLL returns 1.0, and so do
    we. Batch-capable.
    """
    table = np.asarray(table, dtype=np.float64)
    w = _kappa_weights(np.asarray(cats, dtype=np.float64), weights, allow_off_by_one)
    n = table.sum(axis=(-2, -1))
    rows = table.sum(axis=-1)
    cols = table.sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = rows[..., :, None] * cols[..., None, :] / n[..., None, None]
        num = (w * table).sum(axis=(-2, -1))
        den = (w * expected).sum(axis=(-2, -1))
        k = 1.0 - num / den
    used = ((rows + cols) > 0).sum(axis=-1)
    if not np.count_nonzero(w):          # SKLL: all disagreement weights zero gives 1.0
        used = np.zeros_like(used)
    k = np.where(used <= 1, 1.0, k)     # SKLL: a single label gives 1.0
    k = nan_where(n < 1, k, "kappa needs at least 1 response")
    return nan_where((n >= 1) & (used > 1) & (den <= 0), k, "kappa is undefined: no expected disagreement")


def cohen_kappa(y_true, y_pred, weights: str | None = None, allow_off_by_one: bool = False) -> float:
    """Cohen's (weighted) kappa with SKLL semantics (SKLL ``metrics.kappa``; Cohen 1960, 1968).

    kappa = 1 - sum_jk w_jk X_jk / sum_jk w_jk m_jk with observed counts X, chance counts m_jk = n_j+ n_+k / N and
    disagreement weights w_jk = 1[j != k] (unweighted), |j - k| (linear) or (j - k)^2 (quadratic). Scores are
    rounded half-to-even to integers; labels are every integer from the minimum to the maximum of both vectors
    (gaps filled). ``allow_off_by_one`` reduces every distance by one (adjacent scores count as agreement).
    A single label gives 1.0 (as SKLL).
    """
    a, b = as_pair(y_true, y_pred)
    if a.size == 0:
        return undefined("kappa needs at least 1 response")
    a, b = np.round(a), np.round(b)
    lo = min(a.min(), b.min())
    hi = max(a.max(), b.max())
    q = int(hi - lo) + 1
    ia = (a - lo).astype(np.int64)
    ib = (b - lo).astype(np.int64)
    table = np.bincount(ia * q + ib, minlength=q * q).reshape(q, q)
    return as_float(kappa_from_table(table, np.arange(q, dtype=np.float64), weights, allow_off_by_one))


def standard_deviation(x, ddof: int = 1) -> float:
    """Sample standard deviation sqrt(sum (x - mean x)^2 / (N - ddof)); NaN when N <= ddof."""
    x = as_vector(x)
    if x.size <= ddof:
        return undefined("a standard deviation needs more responses than ddof")
    return float(np.std(x, ddof=ddof))
