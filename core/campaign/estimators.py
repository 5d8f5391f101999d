"""Design-weighted, prediction-powered estimates of every campaign metric, with intervals that hold.

One mechanism for every metric (:mod:`core.campaign.moments`): a metric is theta = g(mu), mu a vector of population
means of per-response terms phi_i; mu is estimated by augmented inverse-probability weighting (AIPW), the metric by
g(mu_hat), its interval by the delta method on the covariance of the per-response pseudo-outcomes.

Weights. Response i enters moment j (level L = 0, 1, 2: the systems' scores alone, first score, both scores) with
weight w_i proportional to xi_i / p_i, where xi_i says whether the scores the level needs were observed and p_i is
the recorded probability under which they were (1 for responses scored in earlier iterations); the system moments
(level 0) take the first scores' weights, so that with lambda = 0 below every moment comes from the same scored
responses. The weights of a level are normalised to sum to N (Hajek 1971; ppi-python normalises its weights the
same way).

Estimator. With f_ij the model's prediction of phi_ij from the systems' scores (the control variate, fitted on
earlier iterations only), fbar_j its mean over all N responses, fbar_w,j = sum_i w_i f_ij / N its weighted mean
and mhat_j = sum_i w_i phi_ij / N the weighted mean of the terms,

    mu_hat_j(lambda) = mhat_j + lambda (fbar_j - fbar_w,j).

With lambda = 1 this is prediction-powered inference with the system scores as control variates (Angelopoulos
et al. 2023, Science, eq. 1; the difference / AIPW estimator of Robins, Rotnitzky & Zhao 1994 in its ratio
form, design-consistent with bias O(1/n)) under the probabilities of active inference (Zrnic & Candès 2024,
eq. 3); with lambda = 0 it is the weighted mean of the scored responses. The prediction of a system moment is
the moment itself (it is known for every response), so its estimate is (1 - lambda) times its mean over the scored
responses plus lambda times its mean over all N, as in the PPI++ loss L_n(theta) + lambda (L~_N^f(theta) -
L_n^f(theta)), where a term without the label (X'X for OLS) comes from the labelled data with weight 1 - lambda
and from the unlabelled with weight lambda (Angelopoulos, Duchi & Zrnic 2023, section 2; ppi-python: lambda = 0
recovers the classical point estimate). So lambda = 0 is the classical estimate, the plain metric of the scored
subset, and the power tuning below chooses between it and prediction-powered inference per metric. Taking the
system moments from all N whatever lambda is loses the cancellation between a metric's human and system moments
on the same responses (the errors of E[H^2], E[H S] and E[S^2] in MSE = E[(H - S)^2]); with a poor model of H
given S that made PRMSE's interval wider than the classical one (docs/studies/campaign.md, "Classical inference
inside the power tuning"). Without predictions (the classical estimate) lambda is 0. Normalising the weights
matters: with Horvitz-Thompson weights the random factor sum_i xi_i / (p_i N) would multiply the uncentred means
of the terms, which cancel in a metric like r only when the factor is the same for every term.

Variance (delta method; superpopulation, the responses a sample from the population the metric describes; Zrnic &
Candès 2024, Theorem 1): with a = grad g, the linearised pseudo-outcome of response i is a'P_i + lambda a'Q_i,
P_i = mhat + w_i (phi_i - mhat), Q_i = (f_i - fbar) - w_i (f_i - fbar_w) (:func:`pseudo_outcomes`), and
Var(theta_hat) = Var_i(a'P_i + lambda a'Q_i) / N over all N responses; for r, QWK and human-human agreement the
delete-one jackknife of g over the same pseudo-outcomes, which keeps g's quadratic terms (:func:`
_jackknife_variances`); either with the divisor n - 1 of the n responses the estimate rests on
(:func:`small_sample_factor`). The interval (:func:`intervals`) is
theta_hat +- t_0.975(nu) se on Fisher's z scale for r, QWK and human-human agreement and on the log scale for
RMSE, nu the Satterthwaite degrees of freedom of the variance estimate (at most n - 1, n the responses the estimate
rests on; :func:`degrees_of_freedom`); RMSE's interval is corrected for the skewness of its linearised terms
(Hall's transformation, :func:`skewed_quantiles`); a metric that needs second scores gets no interval (NaN, with
the reason and the number needed) when fewer than :data:`MIN_DOUBLE` responses are scored twice.

Power tuning (PPI++, Angelopoulos, Duchi & Zrnic 2023, section 2; eq. 5 there for the mean): per metric, with
A_i = a'P_i and B_i = a'Q_i, the variance is smallest at lambda = -Cov(A, B) / Var(B), clipped to [0, 1] as PPI++
does; a = grad g(mu_hat(1)). lambda is estimated from the same data, which costs O(1/n) bias, as in PPI++.

The weighted bootstrap (:func:`bootstrap_intervals`) reweights the pseudo-outcomes with Exp(1) weights (the
Bayesian bootstrap of Rubin 1981) and takes percentiles of g.

Every function takes a batch of C campaigns: systems (C, N, K), scores (C, N) with NaN where not scored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.campaign.moments import (
    METRICS,
    NEEDS_SECOND,
    Layout,
    gradient,
    metric_function,
    moment_terms,
    prmse_ratio,
)

#: z quantile of the two-sided 95% interval.
Z95 = 1.959963984540054  # scipy.stats.norm.ppf(0.975) to the last bit (easl next need not import SciPy)
#: Reasons for a NaN estimate.
NO_FIRST = "no response has a human score"
NO_SECOND = "no response has two human scores"
UNDEFINED = "undefined for these scores (constant scores or a non-positive variance)"
UNBOUNDED = (
    "the true-score variance is not clearly above 0 for these scores (Fieller's interval for PRMSE is unbounded);"
    " score more responses twice"
)
#: Fewest responses scored twice for an interval of a metric that needs second scores (PRMSE, human-human
#: agreement). Chosen from the campaign study (docs/studies/campaign.md, "Too few responses scored twice"): below
#: 50 the delta-method intervals covered 16-85% of the true values, from 50 on 92-96%.
MIN_DOUBLE = 50
#: Metrics whose interval is built on Fisher's z scale, and on the log scale (:func:`intervals`).
FISHER_Z = frozenset({"r", "qwk", "hh_r", "hh_qwk"})
LOG_SCALE = frozenset({"rmse"})
#: Metrics whose interval is corrected for the skewness of the estimate's linearised terms (:func:`intervals`).
#: Chosen from the campaign study (docs/studies/campaign.md): RMSE, a function of one mean of squared errors,
#: gains; the same correction made r, QWK and human-human agreement cover less on heavy-tailed scores.
SKEW_CORRECTED = frozenset({"rmse"})
#: Metrics whose standard error is the delete-one jackknife's (:func:`_jackknife_variances`) instead of the delta
#: method's: the correlation-type metrics, the most nonlinear functions of the moments. Chosen from the campaign
#: study (docs/studies/campaign.md): on heavy-tailed scores the delta method's standard error of human-human
#: agreement and QWK was too small; on the simulated raters the two agree.
JACKKNIFE = frozenset({"r", "qwk", "hh_r", "hh_qwk"})


@dataclass(frozen=True)
class CampaignEstimates:
    """Estimates of T metrics for C campaigns: each array is (C, T); ``labels[t]`` = (metric, system or None).

    ``reason`` holds why a value or its interval is NaN ("" where both are defined); ``lam`` the power-tuning
    parameter used (for PRMSE combined: the weight of the first-score PRMSE); ``n`` the number of responses the
    estimate rests on (scored once for the observed metrics, scored twice for those that need second scores);
    ``kurtosis`` the kurtosis of the estimate's linearised per-response terms (:func:`degrees_of_freedom`).
    """

    labels: tuple[tuple[str, int | None], ...]
    value: NDArray[Any]
    se: NDArray[Any]
    low: NDArray[Any]
    high: NDArray[Any]
    lam: NDArray[Any]
    reason: NDArray[Any]
    n: NDArray[Any] | None = None
    kurtosis: NDArray[Any] | None = None

    @property
    def width(self) -> NDArray[Any]:
        """Interval width high - low, (C, T)."""
        return np.asarray(self.high - self.low, dtype=np.float64)

    def index(self, metric: str, system: int | None = None) -> int:
        """Column of ``(metric, system)``."""
        return self.labels.index((metric, system))


def metric_labels(metrics: Sequence[str], k: int) -> tuple[tuple[str, int | None], ...]:
    """(metric, system) for every requested metric and every system where the metric is per system."""
    out: list[tuple[str, int | None]] = []
    for name in metrics:
        if name not in METRICS:
            raise ValueError(f"unknown metric {name!r}; known: {', '.join(METRICS)}")
        out.extend([(name, j) for j in range(k)] if METRICS[name] else [(name, None)])
    return tuple(out)


def _first_bad(mask: NDArray[Any]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def check_campaign(
    systems: NDArray[Any], first: NDArray[Any], second: NDArray[Any], p_first: NDArray[Any], p_second: NDArray[Any]
) -> None:
    """Raise one ValueError naming the first bad entry (campaign, response[, system]) of a campaign's arrays."""
    if systems.ndim != 3:
        raise ValueError(f"systems must be (campaigns, responses, systems), got shape {systems.shape}")
    for name, arr in (("first", first), ("second", second), ("p_first", p_first), ("p_second", p_second)):
        if arr.shape != systems.shape[:2]:
            raise ValueError(f"{name} has shape {arr.shape}, expected {systems.shape[:2]}")
    bad = ~np.isfinite(systems)
    if bad.any():
        c, i, k = _first_bad(bad)
        raise ValueError(f"system score is not finite: campaign {c}, response {i}, system {k} ({systems[c, i, k]})")
    for name, scores in (("first", first), ("second", second)):
        bad = np.isinf(scores)
        if bad.any():
            c, i = _first_bad(bad)
            raise ValueError(f"{name} human score is infinite: campaign {c}, response {i}")
    for name, scores, p in (("p_first", first, p_first), ("p_second", second, p_second)):
        bad = ~np.isnan(scores) & ~((p > 0) & (p <= 1))
        if bad.any():
            c, i = _first_bad(bad)
            raise ValueError(f"{name} must be in (0, 1] for a scored response: campaign {c}, response {i} ({p[c, i]})")
    bad = ~np.isnan(second) & np.isnan(first)
    if bad.any():
        c, i = _first_bad(bad)
        raise ValueError(f"a second score needs a first score: campaign {c}, response {i}")


def check_width(width: float) -> float:
    """The target interval width of a stopping rule, checked: a finite positive number (ValueError otherwise)."""
    w = float(width)
    if not np.isfinite(w) or w <= 0:
        raise ValueError(f"the target interval width must be a positive number, got {width!r}")
    return w


def _weights(first: NDArray[Any], second: NDArray[Any], p_first: NDArray[Any], p_second: NDArray[Any]) -> NDArray[Any]:
    """(C, 3, N) design weights of levels 0, 1, 2: 1, xi1 / p1, xi2 / p2."""
    w1 = np.where(np.isnan(first), 0.0, 1.0 / np.where(np.isnan(first), 1.0, p_first))
    both = ~np.isnan(first) & ~np.isnan(second)
    w2 = np.where(both, 1.0 / np.where(both, p_second, 1.0), 0.0)
    return np.stack([np.ones_like(w1), w1, w2], axis=1)


def pseudo_outcomes(
    phi: NDArray[Any], f: NDArray[Any] | None, w: NDArray[Any], *, overwrite: bool = False
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """(P, Q, shift): P, Q (C, d, N) linearised pseudo-outcomes, shift (C, d), with

    mu_hat(lambda) = mean_i P_i + lambda shift, Var(a' mu_hat) = Var_i(a'P_i + lambda a'Q_i) / N,
    P_i = mhat + w_i (phi_i - mhat), Q_i = (f_i - fbar) - w_i (f_i - fbar_w), shift = fbar - fbar_w,

    fbar_w = sum_i w_i f_i / N the weighted mean of the predictions (module docstring); Q = 0 and shift = 0 without
    predictions. A level without any scored response has P = 0 and shift = NaN, so its moments (and only the
    metrics that use them) are NaN. Level 0 (system moments) takes the weights the caller gives it (:func:`_fit`
    gives it the first scores'). ``overwrite``: P is written over ``phi`` (a temporary of the
    caller's), which saves a copy of the size of the moments.
    """
    lay = Layout((phi.shape[1] - 7) // 5)
    p = phi if overwrite else np.empty_like(phi)
    q = np.empty_like(phi)
    q[:, : lay.h] = 0.0
    shift = np.zeros(phi.shape[:2])
    for level, cols in enumerate((slice(0, lay.h), slice(lay.h, lay.a), slice(lay.a, lay.d))):
        wl = w[:, level][:, None, :]
        total = wl.sum(axis=2, keepdims=True)
        wl = wl * (phi.shape[2] / np.where(total > 0, total, np.inf))  # Hajek weights: sum_i w_i = N
        block, out = phi[:, cols], p[:, cols]
        mhat = np.einsum("cjn,cn->cj", block, wl[:, 0])[..., None] / phi.shape[2]
        shift[:, cols] = np.where(total[..., 0] > 0, 0.0, np.nan)  # NaN marks a level without scores
        np.subtract(block, mhat, out=out)
        out *= wl
        out += mhat
        if f is not None:
            fb, out = f[:, cols], q[:, cols]
            fbar = fb.mean(axis=2, keepdims=True)
            fbar_w = np.einsum("cjn,cn->cj", fb, wl[:, 0])[..., None] / phi.shape[2]
            np.subtract(fb, fbar_w, out=out)
            out *= -wl
            out += fb
            out -= fbar
            shift[:, cols] += (fbar - fbar_w)[..., 0]
        else:
            q[:, cols] = 0.0
    return p, q, shift


def _tuned(a_part: NDArray[Any], b_part: NDArray[Any], control: bool) -> tuple[NDArray[Any], NDArray[Any]]:
    """PPI++ lambda = clip(-Cov(A, B) / Var(B), 0, 1) and Var(A + lambda B) (ddof=1), each (C, T)."""
    n = a_part.shape[2]
    sa, sb = a_part.sum(axis=2), b_part.sum(axis=2)
    var_a = (np.einsum("ctn,ctn->ct", a_part, a_part) - sa * sa / n) / max(n - 1, 1)
    if not control:
        return np.zeros(a_part.shape[:2]), var_a
    cov = (np.einsum("ctn,ctn->ct", a_part, b_part) - sa * sb / n) / max(n - 1, 1)
    var_b = (np.einsum("ctn,ctn->ct", b_part, b_part) - sb * sb / n) / max(n - 1, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = np.clip(np.nan_to_num(np.where(var_b > 0, -cov / var_b, 0.0)), 0.0, 1.0)
    return lam, np.maximum(var_a + 2.0 * lam * cov + lam * lam * var_b, 0.0)


def _counts(labels: Sequence[tuple[str, int | None]], w: NDArray[Any]) -> NDArray[Any]:
    """(C, T) responses each metric rests on: scored once, or scored twice for the metrics that need it."""
    n1 = (w[:, 1] > 0).sum(axis=1)
    n2 = (w[:, 2] > 0).sum(axis=1)
    return np.stack([n2 if name in NEEDS_SECOND else n1 for name, _ in labels], axis=1)


def _reasons(value: NDArray[Any], labels: Sequence[tuple[str, int | None]], w: NDArray[Any]) -> NDArray[Any]:
    n1 = (w[:, 1] > 0).sum(axis=1)
    n2 = (w[:, 2] > 0).sum(axis=1)
    reason = np.full(value.shape, "", dtype=object)
    for t, (name, _) in enumerate(labels):
        reason[:, t] = np.where(np.isnan(value[:, t]), UNDEFINED, "")
        if name in NEEDS_SECOND:
            reason[:, t] = np.where(n2 == 0, NO_SECOND, reason[:, t])
        reason[:, t] = np.where(n1 == 0, NO_FIRST, reason[:, t])
    return reason


@dataclass(frozen=True)
class _Parts:
    p: NDArray[Any]
    q: NDArray[Any]
    shift: NDArray[Any]
    lam: NDArray[Any]
    labels: tuple[tuple[str, int | None], ...]
    k: int
    n: int
    kurtosis: NDArray[Any]
    ratios: dict[int, Ratio]
    skewness: NDArray[Any]


def _fit(
    systems: NDArray[Any],
    first: NDArray[Any],
    second: NDArray[Any],
    p_first: NDArray[Any],
    p_second: NDArray[Any],
    predictions: NDArray[Any] | None,
    metrics: Sequence[str],
) -> tuple[_Parts, NDArray[Any], NDArray[Any], NDArray[Any]]:
    check_campaign(systems, first, second, p_first, p_second)
    c, n, k = systems.shape
    wanted = metric_labels(metrics, k)
    base = [m for m in metrics if m != "prmse_combined"]
    if len(base) < len(metrics):
        base += [m for m in ("prmse", "prmse_double") if m not in base]
    labels = metric_labels(base, k)
    w = _weights(first, second, p_first, p_second)
    w[:, 0] = w[:, 1]  # the system moments weighted as the first scores: lambda = 0 is the classical estimate
    p, q, shift = pseudo_outcomes(moment_terms(systems, first, second), predictions, w, overwrite=True)
    mu1 = p.mean(axis=2) + shift
    gs = [metric_function(name, j, k, n) for name, j in labels]
    a = np.stack([gradient(g, mu1) for g in gs], axis=1)  # (C, T, d)
    a = np.nan_to_num(a)
    a_part = a @ p  # (C, T, N)
    b_part = a @ q
    lam, var = _tuned(a_part, b_part, predictions is not None)
    kurt, skew = _shapes(a_part, b_part, lam)
    mu = p.mean(axis=2)[:, None, :] + np.where(
        np.isnan(shift)[:, None, :], np.nan, lam[..., None] * np.nan_to_num(shift)[:, None, :]
    )
    value = np.stack([g(mu[:, t, :]) for t, g in enumerate(gs)], axis=1)
    var = _jackknife_variances(labels, gs, (p, q, shift, mu, lam, a_part, b_part), w[:, 1] > 0, var)
    ratios = _ratios(labels, wanted, (p, q, mu, lam), k)
    if len(wanted) != len(labels) or wanted != labels:
        value, var, lam, kurt, skew = _with_combined(wanted, labels, (value, var, lam, kurt, skew), ratios)
        labels = wanted
    se = np.sqrt(var / n) if n > 1 else np.full(value.shape, np.nan)
    fieller = {labels.index(key): r for key, r in ratios.items() if key in labels}
    return _Parts(p, q, shift, lam, labels, k, n, kurt, fieller, skew), value, se, w


def _jackknife_variances(
    labels: Sequence[tuple[str, int | None]],
    gs: Sequence[Callable[[NDArray[Any]], NDArray[Any]]],
    fitted: tuple[NDArray[Any], ...],
    scored: NDArray[Any],
    delta: NDArray[Any],
) -> NDArray[Any]:
    """(C, T) per-response variances N Var(theta_hat): the delete-one jackknife's for the metrics of
    :data:`JACKKNIFE`, ``delta`` (the delta method's) for the others and where the jackknife is undefined.

    The estimate is g(Ybar) of the means of the N pseudo-outcomes Y_i = P_i + lambda (Q_i + shift) (:func:`
    pseudo_outcomes`); leaving response i out gives g(Ybar_(i)), Ybar_(i) = Ybar + (Ybar - Y_i) / (N - 1), and
    Var_jack = (N - 1) / N sum_i (d_i - dbar)^2 with d_i = g(Ybar_(i)) - g(Ybar) (Quenouille-Tukey; Efron & Stein
    1981, Ann. Statist. 9, 586-596, eq. 1.3, who show it is biased upwards: it keeps the quadratic terms of g that
    the delta method drops, which heavy-tailed scores make large). Computed exactly for the ``scored`` responses
    (C, N) and to first order, d_i = -a'(Y_i - Ybar) / (N - 1), for the others: a response without a human score
    moves the means by O(1 / N) only (its weights are 0 or 1), where g is linear to O(1 / N^2)."""
    p, q, shift, mu, lam, a_part, b_part = fitted
    n = p.shape[2]
    out = delta.copy()
    todo = [t for t, (name, _) in enumerate(labels) if name in JACKKNIFE]
    if not todo or n < 3:
        return out
    counts = scored.sum(axis=1)
    rows, cols = np.nonzero(scored)  # row-major: each campaign's scored responses in order
    slot = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
    idx = np.zeros((scored.shape[0], max(int(counts.max()), 1)), dtype=np.intp)
    idx[rows, slot] = cols
    camp = np.arange(scored.shape[0])[:, None]
    p_sel, q_sel = p[camp, :, idx], q[camp, :, idx]  # (C, K, d): the scored responses' pseudo-outcomes
    for t in todo:
        lt = lam[:, t, None]
        d = lt * b_part[:, t]
        d += a_part[:, t]
        d -= d.mean(axis=1, keepdims=True)
        d *= -1.0 / (n - 1.0)  # first order: -a'(Y_i - Ybar) / (N - 1)
        m = mu[:, t, None, :]
        y = p_sel + lt[..., None] * (q_sel + np.nan_to_num(shift)[:, None, :])
        with np.errstate(invalid="ignore", divide="ignore"):
            exact = gs[t](m + (m - y) / (n - 1.0)) - gs[t](mu[:, t])[:, None]
        d[rows, cols] = exact[rows, slot]
        d -= d.mean(axis=1, keepdims=True)
        jack = (n - 1.0) * np.einsum("cn,cn->c", d, d)
        out[:, t] = np.where(np.isfinite(jack), jack, delta[:, t])
    return out


@dataclass(frozen=True)
class Ratio:
    """PRMSE = 1 - A / B of C campaigns: the estimates A (MSE(T|S)) and B (V_T), each (C,), their linearised
    per-response terms zA, zB (C, N), and for PRMSE combined its minimum-variance weights (C,) of the first-score
    form in A and in B."""

    a: NDArray[Any]
    b: NDArray[Any]
    za: NDArray[Any]
    zb: NDArray[Any]
    weight_a: NDArray[Any] | None = None


def _ratios(
    labels: Sequence[tuple[str, int | None]],
    wanted: Sequence[tuple[str, int | None]],
    fitted: tuple[NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any]],
    k: int,
) -> dict[tuple[str, int | None], Ratio]:
    """Numerator and denominator of every PRMSE form of ``labels`` with its own power tuning, and of PRMSE combined
    for every system where ``wanted`` asks for it: A = alpha A_1 + (1 - alpha) A_2 and B = beta B_1 + (1 - beta) B_2,
    each the minimum-variance combination of its two estimates (first-score and double-score form: both forms
    estimate the same MSE(T|S) and V_T), weights clipped to [0, 1]; PRMSE combined = 1 - A / B."""
    p, q, mu, lam = fitted
    n = p.shape[2]
    out: dict[tuple[str, int | None], Ratio] = {}
    for t, (name, j) in enumerate(labels):
        if name not in ("prmse", "prmse_double"):
            continue
        parts = []
        for g in prmse_ratio(name, j, k, n):
            a = np.nan_to_num(gradient(g, mu[:, t, :]))
            z = np.einsum("cd,cdn->cn", a, p) + lam[:, t, None] * np.einsum("cd,cdn->cn", a, q)
            parts.append((g(mu[:, t, :]), z))
        out[(name, j)] = Ratio(a=parts[0][0], b=parts[1][0], za=parts[0][1], zb=parts[1][1])
    for name, j in wanted:
        if name == "prmse_combined":
            one, two = out[("prmse", j)], out[("prmse_double", j)]
            alpha = _min_variance_weight(one.za, two.za, one.a, two.a)
            beta = _min_variance_weight(one.zb, two.zb, one.b, two.b)
            out[(name, j)] = Ratio(
                a=_mix(alpha, one.a, two.a),
                b=_mix(beta, one.b, two.b),
                za=alpha[:, None] * one.za + (1.0 - alpha[:, None]) * two.za,
                zb=beta[:, None] * one.zb + (1.0 - beta[:, None]) * two.zb,
                weight_a=alpha,
            )
    return out


def _min_variance_weight(z1: NDArray[Any], z2: NDArray[Any], x1: NDArray[Any], x2: NDArray[Any]) -> NDArray[Any]:
    """w = (V2 - C12) / (V1 + V2 - 2 C12) clipped to [0, 1], V and C from the terms z (C, N); 1 where x2 is NaN, 0
    where x1 is NaN (the other estimate alone)."""
    z1 = z1 - z1.mean(axis=1, keepdims=True)
    z2 = z2 - z2.mean(axis=1, keepdims=True)
    v1, v2, c12 = (np.einsum("cn,cn->c", x, y) for x, y in ((z1, z1), (z2, z2), (z1, z2)))
    with np.errstate(invalid="ignore", divide="ignore"):
        wt = np.clip(np.nan_to_num((v2 - c12) / (v1 + v2 - 2.0 * c12), nan=0.5), 0.0, 1.0)
    return np.asarray(np.where(np.isnan(x2), 1.0, np.where(np.isnan(x1), 0.0, wt)), dtype=np.float64)


def _mix(w: NDArray[Any], x1: NDArray[Any], x2: NDArray[Any]) -> NDArray[Any]:
    both = np.isnan(x1) & np.isnan(x2)
    return np.asarray(np.where(both, np.nan, w * np.nan_to_num(x1) + (1.0 - w) * np.nan_to_num(x2)), dtype=np.float64)


def _kurtosis(z: NDArray[Any]) -> NDArray[Any]:
    """Pearson's kurtosis m4 / m2^2 of the last axis of (C, N) terms (3 where the terms are constant, as for normal
    terms)."""
    return _moment_ratios(z)[0]


def _moment_ratios(z: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any]]:
    """Kurtosis m4 / m2^2 and skewness m3 / m2^1.5 of the last axis of (C, N) terms (3 and 0 where the terms are
    constant, as for normal terms)."""
    zc = z - z.mean(axis=-1, keepdims=True)
    z2 = zc * zc
    m2 = z2.sum(axis=-1) / z.shape[-1]
    m3 = np.einsum("cn,cn->c", z2, zc) / z.shape[-1]
    m4 = np.einsum("cn,cn->c", z2, z2) / z.shape[-1]
    ok = m2 > 0
    m2 = np.where(ok, m2, 1.0)
    kurt = np.where(ok, m4 / (m2 * m2), 3.0)
    skew = np.where(ok, m3 / (m2 * np.sqrt(m2)), 0.0)
    return np.asarray(kurt, dtype=np.float64), np.asarray(skew, dtype=np.float64)


def _shapes(a_part: NDArray[Any], b_part: NDArray[Any], lam: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any]]:
    """(C, T) kurtosis and skewness of each metric's linearised terms a_part + lambda b_part, one metric at a time
    (no (C, T, N) temporary)."""
    pairs = [_moment_ratios(a_part[:, t] + lam[:, t, None] * b_part[:, t]) for t in range(a_part.shape[1])]
    return np.stack([k for k, _ in pairs], axis=1), np.stack([g for _, g in pairs], axis=1)


def _with_combined(
    wanted: tuple[tuple[str, int | None], ...],
    labels: tuple[tuple[str, int | None], ...],
    columns: tuple[NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any]],
    ratios: dict[tuple[str, int | None], Ratio],
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any]]:
    """Columns of ``wanted`` from those of ``labels`` = (value, variance, lambda, kurtosis, skewness); PRMSE combined
    from its :class:`Ratio` (:func:`_ratios`): value 1 - A / B, variance, kurtosis and skewness those of its
    linearised terms (rho zB - zA) / B, rho = A / B, and the weight of the first-score form in A reported in place
    of lambda."""
    value, var, lam, kurt, skew = columns
    cols: tuple[list[NDArray[Any]], ...] = ([], [], [], [], [])
    for name, j in wanted:
        if name != "prmse_combined":
            t = labels.index((name, j))
            for col, src in zip(cols, (value, var, lam, kurt, skew), strict=True):
                col.append(src[:, t])
            continue
        r = ratios[(name, j)]
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = r.b > 0
            rho = np.where(ok, r.a / np.where(ok, r.b, 1.0), np.nan)
            z = (np.nan_to_num(rho)[:, None] * r.zb - r.za) / np.where(ok, r.b, 1.0)[:, None]
        assert r.weight_a is not None
        var_z = np.where(ok, z.var(axis=1, ddof=1), np.nan)
        for col, x in zip(cols, (1.0 - rho, var_z, r.weight_a, *_moment_ratios(z)), strict=True):
            col.append(x)
    return tuple(np.stack(c, axis=1) for c in cols)  # type: ignore[return-value]


def estimate(
    systems: NDArray[Any],
    first: NDArray[Any],
    second: NDArray[Any],
    p_first: NDArray[Any],
    p_second: NDArray[Any],
    *,
    predictions: NDArray[Any] | None = None,
    metrics: Sequence[str] = ("mean", "r", "qwk", "rmse", "smd", "prmse", "hh_r", "hh_qwk"),
) -> CampaignEstimates:
    """Estimates and 95% delta-method intervals of ``metrics`` for a batch of campaigns.

    Parameters
    ----------
    systems : (C, N, K) float, every response's system scores (finite).
    first, second : (C, N) float, the first and second human score, NaN where the response has none.
    p_first, p_second : (C, N) float in (0, 1], the probability under which each observed score was obtained
        (1 for scores from earlier iterations); ignored where the score is missing.
    predictions : (C, d, N) control variates f from :func:`core.campaign.moments.moment_predictions`, or None for
        no control (the classical estimate under uniform probabilities).
    metrics : names from :data:`core.campaign.moments.METRICS`.

    Returns
    -------
    CampaignEstimates; a value is NaN with a reason when no response is scored (twice, for the metrics that need
    second scores) or the metric is undefined (constant scores).
    """
    parts, value, se, w = _fit(systems, first, second, p_first, p_second, predictions, metrics)
    reason = _reasons(value, parts.labels, w)
    se = np.where(np.isnan(value), np.nan, se)
    n = _counts(parts.labels, w)
    se = se * small_sample_factor(n, parts.n)
    df = degrees_of_freedom(n, parts.kurtosis, parts.n)
    low, high = intervals(value, se, parts.labels, df, parts.skewness / np.sqrt(parts.n))
    q = t_quantile(df)
    # too few responses scored twice is the reason to give first: it says what to do
    few = np.isfinite(value) & (n < MIN_DOUBLE) & np.array([name in NEEDS_SECOND for name, _ in parts.labels])
    for t, ratio in parts.ratios.items():
        lo_rho, hi_rho = fieller(ratio, q[:, t])
        low[:, t], high[:, t] = 1.0 - hi_rho, 1.0 - lo_rho
        unbounded = np.isfinite(value[:, t]) & np.isnan(lo_rho) & (reason[:, t] == "") & ~few[:, t]
        reason[:, t] = np.where(unbounded, UNBOUNDED, reason[:, t])
    low, high = np.where(few, np.nan, low), np.where(few, np.nan, high)
    reason = np.where(few & (reason == ""), np.vectorize(_too_few, otypes=[object])(n), reason)
    return CampaignEstimates(
        labels=parts.labels,
        value=value,
        se=se,
        low=low,
        high=high,
        lam=parts.lam,
        reason=reason,
        n=n,
        kurtosis=parts.kurtosis,
    )


def small_sample_factor(n: NDArray[Any], n_responses: int) -> NDArray[Any]:
    """sqrt((N - 1) / N * n / (n - 1)), (C, T): the factor that turns a standard error whose variance divides by
    N - 1 over all N responses into one that divides by n - 1 over the n responses the estimate rests on (scored
    once, or twice for the metrics that need it). The pseudo-outcomes of the N - n responses without the scores
    are constant (or vary only with the control variate), so the variance over N is about the one of the n scored
    responses with divisor n: the ddof = 0 variance, too small by (n - 1) / n. With the factor the classical mean's
    standard error is the textbook s / sqrt(n), the delete-one jackknife's (:func:`_jackknife_variances`) that of
    the scored subset to first order; for unequal design weights it is HC2 with every scored response's leverage
    1 / n (MacKinnon & White 1985, J. Econometrics 29, 305-325, HC2: squared residual / (1 - h_ii)). 1 where
    n <= 1. Not applied to PRMSE's Fieller interval (:func:`fieller`), which over-covers on heavy-tailed scores
    already."""
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (n_responses - 1.0) / n_responses * n / (n - 1.0)
    return np.asarray(np.sqrt(np.where(n > 1, f, 1.0)), dtype=np.float64)


def fieller(ratio: Ratio, q: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any]]:
    """Fieller's interval (Fieller 1954) for rho = A / B, (low, high) each (C,): the rho with
    (A - rho B)^2 <= q^2 (v_AA - 2 rho v_AB + rho^2 v_BB), v the (co)variances of the estimates A and B from their
    linearised terms. It is bounded only where B^2 > q^2 v_BB (the denominator clearly away from 0); NaN
    elsewhere. Unlike the delta method on A / B it keeps the skewness of a ratio with a noisy denominator."""
    n = ratio.za.shape[1]
    za = ratio.za - ratio.za.mean(axis=1, keepdims=True)
    zb = ratio.zb - ratio.zb.mean(axis=1, keepdims=True)
    v_aa, v_ab, v_bb = (np.einsum("cn,cn->c", x, y) / (n - 1.0) / n for x, y in ((za, za), (za, zb), (zb, zb)))
    q2 = q * q
    quad = ratio.b * ratio.b - q2 * v_bb
    half = ratio.a * ratio.b - q2 * v_ab
    const = ratio.a * ratio.a - q2 * v_aa
    with np.errstate(invalid="ignore", divide="ignore"):
        root = np.sqrt(np.maximum(half * half - quad * const, 0.0))
        ok = (quad > 0) & np.isfinite(ratio.a) & np.isfinite(ratio.b)
        low = np.where(ok, (half - root) / np.where(ok, quad, 1.0), np.nan)
        high = np.where(ok, (half + root) / np.where(ok, quad, 1.0), np.nan)
    return low, high


def _too_few(n: int) -> str:
    return f"{int(n)} responses scored twice; an interval needs at least {MIN_DOUBLE}"


def t_quantile(df: NDArray[Any]) -> NDArray[Any]:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (Cornish-Fisher expansion in 1 / df,
    Abramowitz & Stegun 1964, 26.7.5; error below 3e-4 from 5 degrees of freedom on, below 1e-5 from 10);
    z_0.975 for df = inf."""
    z = Z95
    with np.errstate(divide="ignore", invalid="ignore"):
        v = 1.0 / np.maximum(np.asarray(df, dtype=np.float64), 1.0)
    g1 = (z**3 + z) / 4.0
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96.0
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384.0
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160.0
    return np.asarray(z + v * (g1 + v * (g2 + v * (g3 + v * g4))), dtype=np.float64)


def degrees_of_freedom(n: NDArray[Any], kurtosis: NDArray[Any], n_responses: int) -> NDArray[Any]:
    """Degrees of freedom of each interval's t quantile, (C, T): min(n - 1, 2 N / (kappa - 1)).

    The variance estimate is the mean of N squared centred pseudo-outcomes, whose kurtosis kappa gives it a
    relative variance of about (kappa - 1) / N; a scaled chi-square with the same first two moments has
    nu = 2 N / (kappa - 1) degrees of freedom (Satterthwaite 1946). Normal terms (kappa = 3) and N = n give
    about n; heavy-tailed scores, and design weights that put the variance on few responses, give fewer, so the
    interval widens where its standard error is itself uncertain. n - 1 (the responses the estimate rests on)
    caps it.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        nu = 2.0 * n_responses / np.maximum(kurtosis - 1.0, 1e-12)
    return np.asarray(np.minimum(n - 1.0, nu), dtype=np.float64)


def skewed_quantiles(q: NDArray[Any], gamma: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any]]:
    """(lower, upper) quantiles of the studentized estimate T = (theta_hat - theta) / se whose linearised terms have
    skewness gamma sqrt(N) (``gamma`` = skewness / sqrt(N), as for a mean of N terms), by Hall's transformation
    (Hall 1992, J. R. Statist. Soc. B 54, 221-228; the form of Zhou & Dinh 2005, Biostatistics 6, 293-303, their
    T_1):

        f(T) = T + a T^2 + a^2 T^3 / 3 + b,  a = gamma / 3,  b = gamma / 6,

    which is monotone (f' = (1 + a T)^2) and removes the O(N^-1/2) skewness of T, so f(T) is taken as Student's t
    with the interval's degrees of freedom: T lies in [f^-1(-q), f^-1(q)], f^-1(x) = ((1 + 3 a (x - b))^(1/3) - 1)
    / a (x - b where a = 0). For gamma > 0 (a long right tail) the lower quantile is further from 0 than the upper,
    so the interval theta_hat - se [f^-1(q), f^-1(-q)] reaches further up: an estimate that missed the rare large
    terms is low together with its standard error, and the interval makes up for both."""
    gamma = np.nan_to_num(np.asarray(gamma, dtype=np.float64))
    a, b = gamma / 3.0, gamma / 6.0
    flat = a == 0
    safe = np.where(flat, 1.0, a)

    def inverse(x: NDArray[Any]) -> NDArray[Any]:
        u = 3.0 * a * (x - b)
        with np.errstate(invalid="ignore", divide="ignore"):  # (1 + u)^(1/3) - 1 without cancellation near u = 0
            root = np.where(u > -1.0, np.expm1(np.log1p(u) / 3.0), np.cbrt(1.0 + u) - 1.0)
        return np.asarray(np.where(flat, x - b, root / safe), dtype=np.float64)

    return inverse(-q), inverse(q)


def intervals(
    value: NDArray[Any],
    se: NDArray[Any],
    labels: Sequence[tuple[str, int | None]],
    df: NDArray[Any],
    skewness: NDArray[Any] | None = None,
) -> tuple[NDArray[Any], NDArray[Any]]:
    """95% intervals (low, high), each (C, T), from the standard errors (delta method or jackknife, module docstring).

    The interval is value +- q se on a scale h where the sampling distribution is closer to normal, mapped back
    (the delta method on h: se_h = h'(value) se): Fisher's z, h = atanh, for Pearson r and human-human r (Fisher
    1921) and for QWK, which on continuous scores is Lin's concordance correlation coefficient (Lin 1989 uses the
    same transformation for its interval); h = log for RMSE, which keeps it positive. q is the 0.975 quantile of
    Student's t with ``df`` degrees of freedom (:func:`degrees_of_freedom`, :func:`t_quantile`). The other
    metrics (the mean, SMD, PRMSE) stay on their own scale. With ``skewness`` (C, T), the skewness of each
    estimate's linearised terms over the N responses divided by sqrt(N), the metrics of :data:`SKEW_CORRECTED`
    take h(value) - se_h [f^-1(q), f^-1(-q)] instead, f Hall's transformation (:func:`skewed_quantiles`).
    """
    q = t_quantile(df)
    low, high = value - q * se, value + q * se
    for t, (name, _) in enumerate(labels):
        v, s, qt = value[:, t], se[:, t], q[:, t]
        lower, upper = -qt, qt
        if skewness is not None and name in SKEW_CORRECTED:
            lower, upper = skewed_quantiles(qt, skewness[:, t])
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if name in FISHER_Z:
                inside = np.abs(v) < 1.0
                z, sz = np.arctanh(np.where(inside, v, 0.0)), s / (1.0 - v * v)
                low[:, t] = np.where(inside, np.tanh(z - upper * sz), low[:, t])
                high[:, t] = np.where(inside, np.tanh(z - lower * sz), high[:, t])
            elif name in LOG_SCALE:
                pos = v > 0
                sl = s / np.where(pos, v, 1.0)
                low[:, t] = np.where(pos, v * np.exp(-upper * sl), low[:, t])
                high[:, t] = np.where(pos, v * np.exp(-lower * sl), high[:, t])
            else:
                low[:, t], high[:, t] = v - upper * s, v - lower * s
    return low, high


def bootstrap_intervals(
    systems: NDArray[Any],
    first: NDArray[Any],
    second: NDArray[Any],
    p_first: NDArray[Any],
    p_second: NDArray[Any],
    *,
    rng: np.random.Generator,
    predictions: NDArray[Any] | None = None,
    metrics: Sequence[str] = ("mean", "r", "qwk", "rmse", "smd", "prmse", "hh_r", "hh_qwk"),
    n_boot: int = 1000,
) -> tuple[NDArray[Any], NDArray[Any]]:
    """Weighted-bootstrap 95% percentile intervals (low, high), each (C, T), with the power tuning held fixed.

    Each replicate draws Exp(1) weights W_i on the responses and evaluates g at sum_i W_i Y*_i / sum_i W_i
    (Rubin 1981; the multiplier bootstrap of the pseudo-outcomes). Responses are processed in chunks of
    replicates so memory stays O(N x chunk).
    """
    if n_boot < 2:
        raise ValueError(f"n_boot must be at least 2, got {n_boot}")
    if "prmse_combined" in metrics:
        raise ValueError("the weighted bootstrap does not cover prmse_combined; ask for prmse and prmse_double")
    parts, _, _, _ = _fit(systems, first, second, p_first, p_second, predictions, metrics)
    c, n = systems.shape[:2]
    gs = [metric_function(name, j, parts.k, n) for name, j in parts.labels]
    draws = np.empty((n_boot, c, len(gs)))
    chunk = max(1, int(2e7 // max(n * c, 1)))
    for start in range(0, n_boot, chunk):
        wts = rng.exponential(size=(min(chunk, n_boot - start), c, n))
        tot = wts.sum(axis=2)[..., None]
        wp = np.einsum("bcn,cdn->bcd", wts, parts.p) / tot
        wq = np.einsum("bcn,cdn->bcd", wts, parts.q) / tot + parts.shift[None]  # NaN: a level without scores
        for t, g in enumerate(gs):
            draws[start : start + wts.shape[0], :, t] = g(wp + parts.lam[None, :, t, None] * wq)
    return np.nanquantile(draws, 0.025, axis=0), np.nanquantile(draws, 0.975, axis=0)
