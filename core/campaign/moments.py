"""Every campaign metric as a smooth function g of a vector of population means (moments), and its gradient.

Notation: S_k the score of system k (known for every response), H the first human score of a response, A and B
its first and second human score on the double-scored responses. A moment is a population mean E[phi(H, A, B, S)]
of a per-response function phi; each moment has a *level*: 0 needs no human score (E[S_k], E[S_k^2]), 1 needs the
first score (E[H], E[H^2], E[H S_k]), 2 needs both scores (E[A], E[A^2], E[B], E[B^2], E[A B], E[A S_k],
E[B S_k]). The metrics, with mu_x = E[x], var_x = E[x^2] - mu_x^2, cov = E[H S] - mu_H mu_S and n the number of
responses (the ddof=1 factor n / (n - 1) is that of the plain metric when every response is scored):

- mean human score: mu_H
- Pearson r: cov / sqrt(var_H var_S)
- continuous QWK: 2 cov / (var_H + var_S + (mu_S - mu_H)^2) (Haberman 2019; RSMTool ``quadratic_weighted_kappa``)
- RMSE: sqrt(E[H^2] - 2 E[H S] + E[S^2])
- SMD: (mu_S - mu_H) / sd_H, sd with ddof=1 (RSMTool's "unpooled" SMD)
- PRMSE (Loukina et al. 2020, Appendix B, eq. 4-8 with one rating per response and the rater error variance from
  the double-scored responses, RSMTool's ``rater_error_variance`` route): V_e = (E[A^2] + E[B^2] - 2 E[A B]) / 2
  (eq. 4-5 with two ratings), V_T = var_H n / (n - 1) - V_e (eq. 6), MSE(T|S) = E[(H - S)^2] - V_e (eq. 7),
  PRMSE = 1 - MSE(T|S) / V_T (eq. 8).
- PRMSE on double-scored responses (the classical design of the paper's section 5.3, eq. 6-8 with c_i = 2):
  Hbar = (A + B) / 2, V_T = var_Hbar n / (n - 1) - V_e / 2, MSE(T|S) = E[(Hbar - S)^2] - V_e / 2.
- human-human r and QWK: the same formulas on (A, B).
- PRMSE combined (:mod:`core.campaign.estimators`): the minimum-variance weighted mean of the two PRMSE estimates
  above, which estimate the same population value when the two raters are exchangeable (it is not a function of
  the moments alone, so :func:`metric_function` does not define it).

Gradients are central differences with a relative step of 1e-6 (every g is a rational function of the moments, so
the error is far below the sampling error); every function takes moments with any leading batch axes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: Metrics a campaign estimates; ``per_system`` says whether a value is reported for each system.
METRICS: dict[str, bool] = {
    "mean": False,
    "r": True,
    "qwk": True,
    "rmse": True,
    "smd": True,
    "prmse": True,
    "prmse_double": True,
    "prmse_combined": True,
    "hh_r": False,
    "hh_qwk": False,
}
#: The metrics whose estimate needs second scores.
NEEDS_SECOND = frozenset({"prmse", "prmse_double", "prmse_combined", "hh_r", "hh_qwk"})


@dataclass(frozen=True)
class Layout:
    """Positions of the moments for K systems, and the level of each (0, 1 or 2)."""

    k: int

    @property
    def d(self) -> int:
        """Number of moments: 2K (level 0) + 2 + K (level 1) + 5 + 2K (level 2)."""
        return 5 * self.k + 7

    def s(self, j: int) -> int:
        """E[S_j]."""
        return j

    def ss(self, j: int) -> int:
        """E[S_j^2]."""
        return self.k + j

    @property
    def h(self) -> int:
        """E[H]."""
        return 2 * self.k

    @property
    def hh(self) -> int:
        """E[H^2]."""
        return 2 * self.k + 1

    def hs(self, j: int) -> int:
        """E[H S_j]."""
        return 2 * self.k + 2 + j

    @property
    def a(self) -> int:
        """E[A] (first score, double-scored responses)."""
        return 3 * self.k + 2

    @property
    def aa(self) -> int:
        """E[A^2]."""
        return 3 * self.k + 3

    @property
    def b(self) -> int:
        """E[B] (second score)."""
        return 3 * self.k + 4

    @property
    def bb(self) -> int:
        """E[B^2]."""
        return 3 * self.k + 5

    @property
    def ab(self) -> int:
        """E[A B]."""
        return 3 * self.k + 6

    def as_(self, j: int) -> int:
        """E[A S_j]."""
        return 3 * self.k + 7 + j

    def bs(self, j: int) -> int:
        """E[B S_j]."""
        return 4 * self.k + 7 + j

    @property
    def levels(self) -> NDArray[Any]:
        """(d,) int: 0 for system-only moments, 1 for first-score moments, 2 for double-score moments."""
        return np.repeat([0, 1, 2], [2 * self.k, 2 + self.k, 5 + 2 * self.k])


def moment_terms(systems: NDArray[Any], first: NDArray[Any], second: NDArray[Any]) -> NDArray[Any]:
    """phi: (C, d, N) per-response moment terms (moments first, so each moment is contiguous over responses);
    unscored entries are 0 (their design weight is 0).

    ``systems`` (C, N, K); ``first``/``second`` (C, N) with NaN where the response has no such score.
    """
    c, n, k = systems.shape
    lay = Layout(k)
    out = np.empty((c, lay.d, n))
    sk = out[:, :k]
    sk[...] = systems.transpose(0, 2, 1)
    np.multiply(sk, sk, out=out[:, k : 2 * k])
    h = out[:, lay.h]
    h[...] = first
    np.nan_to_num(h, copy=False, nan=0.0)
    both = ~np.isnan(first) & ~np.isnan(second)
    a = out[:, lay.a]
    np.multiply(h, both, out=a)
    b = out[:, lay.b]
    b[...] = second
    np.nan_to_num(b, copy=False, nan=0.0)
    b *= both
    for x, xx in ((h, lay.hh), (a, lay.aa), (b, lay.bb)):
        np.multiply(x, x, out=out[:, xx])
    np.multiply(a, b, out=out[:, lay.ab])
    np.multiply(h[:, None], sk, out=out[:, lay.hs(0) : lay.hs(0) + k])
    np.multiply(a[:, None], sk, out=out[:, lay.as_(0) : lay.as_(0) + k])
    np.multiply(b[:, None], sk, out=out[:, lay.bs(0) : lay.bs(0) + k])
    return out


def moment_predictions(
    systems: NDArray[Any], mean: NDArray[Any], var: NDArray[Any], error_var: NDArray[Any] | float
) -> NDArray[Any]:
    """f: (C, d, N) predictions of the moment terms from the systems' scores alone.

    ``mean``/``var`` (C, N) are a model's conditional mean and variance of one human score given the systems'
    scores, ``error_var`` (C,) or a number its rater error variance (so Cov(A, B | S) = var - error_var, floored
    at 0). System-only moments are their exact values.
    """
    c, n, k = systems.shape
    lay = Layout(k)
    out = np.empty((c, lay.d, n))
    sk = out[:, :k]
    sk[...] = systems.transpose(0, 2, 1)
    np.multiply(sk, sk, out=out[:, k : 2 * k])
    ev = np.asarray(error_var, dtype=np.float64)
    ev = ev[:, None] if ev.ndim else ev
    for i in (lay.h, lay.a, lay.b):
        out[:, i] = mean
    np.multiply(mean, mean, out=out[:, lay.ab])
    np.add(out[:, lay.ab], var, out=out[:, lay.hh])
    out[:, lay.aa] = out[:, lay.hh]
    out[:, lay.bb] = out[:, lay.hh]
    out[:, lay.ab] += np.maximum(var - ev, 0.0)
    for j0 in (lay.hs(0), lay.as_(0), lay.bs(0)):
        np.multiply(mean[:, None], sk, out=out[:, j0 : j0 + k])
    return out


def _var(mu: NDArray[Any], i: int, ii: int) -> NDArray[Any]:
    return np.asarray(mu[..., ii] - mu[..., i] ** 2, dtype=np.float64)


def _cov(mu: NDArray[Any], i: int, j: int, ij: int) -> NDArray[Any]:
    return np.asarray(mu[..., ij] - mu[..., i] * mu[..., j], dtype=np.float64)


def _r(cov: NDArray[Any], va: NDArray[Any], vb: NDArray[Any]) -> NDArray[Any]:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((va > 0) & (vb > 0), cov / np.sqrt(np.abs(va * vb)), np.nan)


def _qwk(cov: NDArray[Any], va: NDArray[Any], vb: NDArray[Any], dm: NDArray[Any]) -> NDArray[Any]:
    den = va + vb + dm * dm
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, 2.0 * cov / den, np.nan)


def _ratio(num: NDArray[Any], den: NDArray[Any]) -> NDArray[Any]:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / den, np.nan)


def _rater_error_variance(mu: NDArray[Any], lay: Layout) -> NDArray[Any]:
    """V_e = E[(A - B)^2] / 2 (Loukina et al. 2020, eq. 4-5 with two ratings per response)."""
    return np.asarray((mu[..., lay.aa] + mu[..., lay.bb] - 2.0 * mu[..., lay.ab]) / 2.0, dtype=np.float64)


def metric_function(name: str, system: int | None, k: int, n: float) -> Callable[[NDArray[Any]], NDArray[Any]]:
    """g: moments (..., d) -> metric (...), for ``name`` in :data:`METRICS` and system index ``system``."""
    lay = Layout(k)
    ddof = n / (n - 1.0) if n > 1 else np.nan
    j = 0 if system is None else system

    def observed(mu: NDArray[Any]) -> NDArray[Any]:
        vh, vs = _var(mu, lay.h, lay.hh), _var(mu, lay.s(j), lay.ss(j))
        cov = _cov(mu, lay.h, lay.s(j), lay.hs(j))
        dm = mu[..., lay.s(j)] - mu[..., lay.h]
        mse = mu[..., lay.hh] - 2.0 * mu[..., lay.hs(j)] + mu[..., lay.ss(j)]
        if name == "r":
            return _r(cov, vh, vs)
        if name == "qwk":
            return _qwk(cov, vh, vs, dm)
        if name == "rmse":
            return np.asarray(np.sqrt(np.where(mse >= 0, mse, np.nan)), dtype=np.float64)
        if name == "smd":
            return _ratio(dm, np.sqrt(np.where(vh > 0, vh * ddof, np.nan)))
        ve = _rater_error_variance(mu, lay)
        return 1.0 - _ratio(mse - ve, vh * ddof - ve)

    def double(mu: NDArray[Any]) -> NDArray[Any]:
        va, vb = _var(mu, lay.a, lay.aa), _var(mu, lay.b, lay.bb)
        cov = _cov(mu, lay.a, lay.b, lay.ab)
        if name == "hh_r":
            return _r(cov, va, vb)
        if name == "hh_qwk":
            return _qwk(cov, va, vb, mu[..., lay.b] - mu[..., lay.a])
        ve = _rater_error_variance(mu, lay)
        hbar = (mu[..., lay.a] + mu[..., lay.b]) / 2.0
        hbar2 = (mu[..., lay.aa] + mu[..., lay.bb] + 2.0 * mu[..., lay.ab]) / 4.0
        hbar_s = (mu[..., lay.as_(j)] + mu[..., lay.bs(j)]) / 2.0
        mse = hbar2 - 2.0 * hbar_s + mu[..., lay.ss(j)] - ve / 2.0
        return 1.0 - _ratio(mse, (hbar2 - hbar * hbar) * ddof - ve / 2.0)

    if name == "mean":
        return lambda mu: mu[..., lay.h]
    if name in ("r", "qwk", "rmse", "smd", "prmse"):
        return observed
    if name in ("prmse_double", "hh_r", "hh_qwk"):
        return double
    raise ValueError(f"unknown metric {name!r}; known: {', '.join(METRICS)}")


def prmse_ratio(
    name: str, system: int | None, k: int, n: float
) -> tuple[Callable[[NDArray[Any]], NDArray[Any]], Callable[[NDArray[Any]], NDArray[Any]]]:
    """(numerator, denominator) of PRMSE = 1 - MSE(T|S) / V_T as functions of the moments: MSE(T|S) (eq. 7) and V_T
    (eq. 6) of ``name`` "prmse" (one rating per response) or "prmse_double" (the mean of two ratings), as in
    :func:`metric_function`. Both forms estimate the same two population values."""
    lay = Layout(k)
    ddof = n / (n - 1.0) if n > 1 else np.nan
    j = 0 if system is None else system

    def hbar(mu: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
        mean = (mu[..., lay.a] + mu[..., lay.b]) / 2.0
        square = (mu[..., lay.aa] + mu[..., lay.bb] + 2.0 * mu[..., lay.ab]) / 4.0
        return mean, square, (mu[..., lay.as_(j)] + mu[..., lay.bs(j)]) / 2.0

    def num(mu: NDArray[Any]) -> NDArray[Any]:
        ve = _rater_error_variance(mu, lay)
        if name == "prmse":
            return np.asarray(mu[..., lay.hh] - 2.0 * mu[..., lay.hs(j)] + mu[..., lay.ss(j)] - ve, dtype=np.float64)
        _, square, cross = hbar(mu)
        return np.asarray(square - 2.0 * cross + mu[..., lay.ss(j)] - ve / 2.0, dtype=np.float64)

    def den(mu: NDArray[Any]) -> NDArray[Any]:
        ve = _rater_error_variance(mu, lay)
        if name == "prmse":
            return np.asarray(_var(mu, lay.h, lay.hh) * ddof - ve, dtype=np.float64)
        mean, square, _ = hbar(mu)
        return np.asarray((square - mean * mean) * ddof - ve / 2.0, dtype=np.float64)

    if name not in ("prmse", "prmse_double"):
        raise ValueError(f"{name!r} is not a PRMSE form")
    return num, den


def gradient(g: Callable[[NDArray[Any]], NDArray[Any]], mu: NDArray[Any]) -> NDArray[Any]:
    """Central-difference gradient of g at mu: (..., d) -> (..., d); NaN where g is undefined nearby."""
    d = mu.shape[-1]
    step = 1e-6 * np.maximum(1.0, np.abs(mu))
    eye = np.eye(d)
    up = g(mu[..., None, :] + eye * step[..., None, :])
    down = g(mu[..., None, :] - eye * step[..., None, :])
    return np.asarray((up - down) / (2.0 * step), dtype=np.float64)
