"""The annotator-aware model: each annotator's offset, slope and reliability, each item's ambiguity.

Notation (unit scale; ``c = 0.5`` the middle of the scale; observation ``k`` is annotator ``a`` scoring item
``i`` with ``x_k``)::

    x_k = c + o_a + s_a (mu_i - c) + e_k,        e_k ~ N(0, r_a q_i)
    mu_i ~ N(m0, tau_mu^2),   o_a ~ N(0, tau_o^2),   s_a ~ N(1, tau_s^2)
    q_i  shrunk toward the pooled noise q0 with nu_q pseudo-scores; r_a toward 1 with nu_r, geometric mean 1

``o_a`` is the annotator's offset, ``s_a`` the slope (how much of the scale they use), ``r_a`` the
unreliability, ``q_i`` the item's ambiguity. The fit is mean-field EM (alternating updates): with
``u_i = mu_i - c``, ``y_k = x_k - c`` and ``w_k = 1 / (r_a q_i)``,

* items: ``Var(u_i) = 1 / (1/tau_mu^2 + sum_k w_k E[s_a^2])``,
  ``E[u_i] = Var(u_i) (m0 / tau_mu^2 + sum_k w_k (E[s_a] (y_k - E[o_a]) - Cov(o_a, s_a)))``;
* annotators: ``(o_a, s_a)`` jointly Gaussian, from the 2 x 2 normal equations of
  ``sum_k w_k E[(y_k - o_a - s_a u_i)^2] + o_a^2 / tau_o^2 + (s_a - 1)^2 / tau_s^2``;
* noise: with ``e2_k = E[(y_k - o_a - s_a u_i)^2]``, ``r_a = (nu_r + sum_k e2_k / q_i) / (nu_r + n_a)``
  (then scaled to geometric mean 1; ``nu_r`` by empirical Bayes, :func:`core.models.aware.noise.noise_strengths`,
  at sweeps 1, 2, 4, 8, ... only), ``q0 = mean_k e2_k / r_a`` over the scores of items scored at least twice,
  ``q_i = (nu_q q0 + sum_k e2_k / r_a) / (nu_q + n_i)``;
* prior widths (empirical Bayes): ``m0 = mean_i E[u_i]``, ``tau_mu^2 = mean_i E[(u_i - m0)^2]``,
  ``tau_o^2 = mean_a E[o_a^2]``, ``tau_s^2 = mean_a E[(s_a - 1)^2]``.

An item's interval adds to ``Var(u_i)`` the propagated uncertainty of the annotator terms that touch it
(delta method: ``du_i/do_a = -w s_a / P_i``, ``du_i/ds_a ~ -w u_i / P_i``). Random clickers get a large ``r_a``
(and a slope pulled toward 0 when the pool's slopes vary): they are down-weighted, never removed.

Only items scored at least twice tell the noise from the items' spread (EM fed with single scores drifts along
the unidentified ridge: slopes toward 0, ranks scrambled across annotators). So ``q0`` comes from those items,
and with no such item the fit is its cold start: the raw scores, annotators neutral, DA's estimates.

The fit is a function of the set of observations (:class:`Observations` keeps them in a canonical order, so a
permutation of the rows gives the same fit bit for bit), refitted to every live observation each time.

References: the model generalises the additive annotator effects of Raykar et al. (2010), "Learning from
crowds", JMLR 11, and the rater offsets and scale of Paun et al. (2018), "Comparing Bayesian models of
annotation", TACL 6; the EM is Dempster, Laird & Rubin (1977) in its mean-field form (Bishop 2006, section
10.1); ``docs/studies/aware.md`` states the model and its targets.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.models.aware.data import CENTER, Observations, PairStats
from easl_toolkit.core.models.aware.noise import NU_R_MAX, loo_noise_ratio, noise_strengths
from easl_toolkit.core.models.base import Posterior

_FLOOR = 1e-4  # smallest variance of q_i, tau_mu^2, tau_o^2, tau_s^2 (unit scale)
#: A warm start is taken while the observations are at most this many times those it was fitted on
WARM_GROWTH = 1.25


@dataclass(frozen=True)
class AwareConfig:
    """Settings of the fit.

    Attributes
    ----------
    nu_q : float
        Pseudo-scores that shrink each item's ambiguity ``q_i`` toward the pooled ``q0`` (default 4).
    nu_r : float or None
        Pseudo-scores that shrink each annotator's unreliability ``r_a`` toward 1; None (the default): estimated
        from the data (:func:`core.models.aware.noise.noise_strengths`, empirical Bayes).
    sweeps_cold, sweeps_warm : int
        Most EM sweeps from scratch and from a warm start.
    tol : float
        Stop when no item mean moves by more than ``tol`` in a sweep (unit scale; 5e-4 is 0.05 points on a
        0-100 scale, about 1% of a posterior standard deviation at 4 scores per item).
    """

    nu_q: float = 4.0
    nu_r: float | None = None
    sweeps_cold: int = 60
    sweeps_warm: int = 20
    tol: float = 5e-4


#: The default settings.
DEFAULT_CONFIG = AwareConfig()


@dataclass
class AwareState:
    """A fitted annotator-aware model (unit scale). Arrays per item: ``mu`` (posterior mean of ``mu_i``),
    ``var_mu`` (its variance given the annotator terms), ``var`` (with their uncertainty), ``q``, ``count``.
    Per annotator: ``offset``, ``slope``, ``var_offset``, ``var_slope``, ``cov_os``, ``noise`` (``r_a``),
    ``n_scores``. Scalars: ``m0``, ``tau_mu2``, ``tau_o2``, ``tau_s2``, ``q0``, ``sweeps``, ``nu_q``."""

    mu: NDArray[Any]
    var_mu: NDArray[Any]
    var: NDArray[Any]
    q: NDArray[Any]
    count: NDArray[Any]
    offset: NDArray[Any]
    slope: NDArray[Any]
    var_offset: NDArray[Any]
    var_slope: NDArray[Any]
    cov_os: NDArray[Any]
    noise: NDArray[Any]
    n_scores: NDArray[Any]
    m0: float
    tau_mu2: float
    tau_o2: float
    tau_s2: float
    q0: float
    sweeps: int = 0
    nu_q: float = 4.0

    @property
    def n_items(self) -> int:
        """Number of items."""
        return int(self.mu.size)

    @property
    def n_annotators(self) -> int:
        """Number of annotators."""
        return int(self.offset.size)

    def subset(self, keep: NDArray[Any]) -> AwareState:
        """The state of the items ``keep`` (the annotator terms and scalars unchanged)."""
        return dataclasses.replace(
            self, mu=self.mu[keep], var_mu=self.var_mu[keep], var=self.var[keep], q=self.q[keep], count=self.count[keep]
        )

    def to_arrays(self) -> dict[str, NDArray[Any]]:
        """Every field as a float64 array (scalars as length-1 arrays), for a store's state cache."""
        return {
            f.name: np.atleast_1d(np.asarray(getattr(self, f.name), dtype=np.float64)) for f in dataclasses.fields(self)
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, NDArray[Any]]) -> AwareState:
        """Inverse of :meth:`to_arrays`."""
        kw: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            v = np.asarray(arrays[f.name], dtype=np.float64)
            kw[f.name] = int(v[0]) if f.name == "sweeps" else (float(v[0]) if f.type == "float" else v.copy())
        return cls(**kw)

    def summary(self) -> Posterior:
        """The :class:`~core.models.base.Posterior` of the items on [0, 1]: the score a typical annotator (offset 0,
        slope 1, noise ``q0``) would give on the bounded scale, ``G(mu_i)`` with ``G(m) ~ E[clip(m + e, 0, 1)]``,
        ``e ~ N(0, q0)`` (:mod:`core.models.aware.scale`; strictly increasing). The interval is the image of the 95%
        interval ``mu -+ t_{0.975, df_i} sqrt(var)`` (:attr:`df`), the variance ``G'(mu)^2 var`` (delta method).
        ``mu`` itself is what selection, rank figures and the stopping rule use."""
        from scipy import special  # here: easl status, which imports this module, needs none

        from easl_toolkit.core.models.aware.scale import bounded_interval, expected_score_slope

        sd_q0 = float(np.sqrt(self.q0))
        df, which = np.unique(self.df, return_inverse=True)  # few distinct counts: the quantile once for each
        half = np.sqrt(self.var) * special.stdtrit(df, 0.975)[which.reshape(self.df.shape)]
        estimate, low, high = bounded_interval(self.mu, half, sd_q0)
        return Posterior(estimate, estimate.copy(), expected_score_slope(self.mu, sd_q0) ** 2 * self.var, low, high)

    @property
    def df(self) -> NDArray[Any]:
        """Degrees of freedom of each item's marginal posterior, ``nu_q + n_i``: ``q_i`` is estimated from
        ``n_i`` scores and ``nu_q`` pseudo-scores, so ``mu_i`` is Student t rather than normal."""
        return self.nu_q + self.count


def _prior_state(obs: Observations) -> AwareState:
    """Cold start: item means of the raw scores, annotators neutral (o = 0, s = 1, r = 1)."""
    n, na = obs.n_items, obs.n_annotators
    cnt = np.bincount(obs.item, minlength=n).astype(np.float64)
    y = obs.score - CENTER
    ybar = float(y.mean()) if y.size else 0.0
    u = np.where(cnt > 0, np.bincount(obs.item, y, n) / np.maximum(cnt, 1.0), ybar)
    pooled = max(float(np.var(y)) * 0.5 if y.size > 1 else 0.02, _FLOOR)
    zero, pool = np.zeros(na), np.full(n, pooled)
    n_scores = np.bincount(obs.annotator, minlength=na).astype(np.float64)
    return AwareState(
        mu=u + CENTER,
        var_mu=pool,
        var=pool.copy(),
        q=pool.copy(),
        count=cnt,
        offset=zero,
        slope=np.ones(na),
        var_offset=zero.copy(),
        var_slope=zero.copy(),
        cov_os=zero.copy(),
        noise=np.ones(na),
        n_scores=n_scores,
        m0=ybar + CENTER,
        tau_mu2=max(float(np.var(u)), _FLOOR),
        tau_o2=0.05**2,
        tau_s2=0.2**2,
        q0=pooled,
    )


def _warm_start(warm: AwareState, obs: Observations) -> AwareState:
    """``warm`` padded to the observations' items and annotators (new ones at their priors); items scored for
    the first time start at their raw means, and the prior widths at no less than half their cold starts (EM creeps
    away from a collapsed prior width far too slowly). A state fitted on no scores is no start at all: cold."""
    cold = _prior_state(obs)
    if not warm.count.any():
        return cold
    pad_i, pad_a = obs.n_items - warm.n_items, obs.n_annotators - warm.n_annotators
    if pad_i < 0 or pad_a < 0:
        raise ValueError("a warm state cannot have more items or annotators than the observations")
    w = warm
    per_item = {"mu": w.m0, "var_mu": w.tau_mu2, "var": w.tau_mu2, "q": w.q0, "count": 0.0}
    per_annotator = {"offset": 0.0, "slope": 1.0, "var_offset": w.tau_o2, "var_slope": w.tau_s2, "cov_os": 0.0}
    per_annotator |= {"noise": 1.0, "n_scores": 0.0}
    pads = [(name, v, pad_i) for name, v in per_item.items()] + [(name, v, pad_a) for name, v in per_annotator.items()]
    st = dataclasses.replace(w, **{k: np.concatenate([getattr(w, k), np.full(pad, v)]) for k, v, pad in pads})
    new = (st.count == 0) & (cold.count > 0)
    st.mu[new] = cold.mu[new]
    st.var_mu[new] = cold.var_mu[new]
    for width in ("tau_mu2", "tau_o2", "tau_s2"):
        setattr(st, width, max(getattr(st, width), 0.5 * getattr(cold, width)))
    return st


@dataclass
class _Sweep:
    """What :func:`fit` updates: ``st`` (set by each step), the items' centred means ``u = mu - c``, their
    precisions ``prec = 1 / Var(u_i)``, and the prior mean ``m0``, centred likewise."""

    st: AwareState
    u: NDArray[Any]
    prec: NDArray[Any]
    m0: float


def fit(obs: Observations, *, warm: AwareState | None = None, config: AwareConfig = DEFAULT_CONFIG) -> AwareState:
    """Fit the annotator-aware model to every observation by mean-field EM (module docstring).

    Each sweep is a few sparse matrix products over the pair sums (:class:`PairStats`), ``O(n_pairs + n_items +
    n_annotators)``: :func:`_item_step`, :func:`_annotator_step`, :func:`_noise_step`; then :func:`_fitted`.

    Parameters
    ----------
    obs : Observations
        All live scores.
    warm : AwareState, optional
        A previous fit (fewer or equal items and annotators) to start from, while the observations are at most
        :data:`WARM_GROWTH` times those it was fitted on, for at most ``config.sweeps_warm`` sweeps; one that has
        not converged by then gives way to the cold fit, which a replay of the log reaches (``easl verify``).
    config : AwareConfig
        Shrinkage strengths, sweep limits, tolerance.

    Returns
    -------
    AwareState
        The fit; ``sweeps`` says how many sweeps ran.

    References
    ----------
    Dempster, Laird & Rubin (1977); Bishop (2006), *Pattern Recognition and Machine Learning*, section 10.1;
    ``docs/studies/aware.md`` (the model).

    Examples
    --------
    Two annotators, the second scores everything 0.2 higher; the model puts the offset on the annotator:

    >>> obs = Observations.build([0, 1, 2, 0, 1, 2], [0, 0, 0, 1, 1, 1], [0.2, 0.5, 0.6, 0.4, 0.7, 0.8],
    ...                          n_items=3)
    >>> st = fit(obs)
    >>> bool(st.offset[1] - st.offset[0] > 0.15), [round(float(m), 2) for m in np.diff(st.mu)]
    (True, [0.3, 0.1])
    """
    P = obs.pairs
    if not (P.n_per_item >= 2).any():  # (module docstring: nothing tells the noise from the items' spread)
        return _prior_state(obs)
    if warm is not None and obs.size > WARM_GROWTH * warm.count.sum():
        warm = None  # far from the data now (e.g. one score per item, where the annotator terms are not identified)
    st = _prior_state(obs) if warm is None else _warm_start(warm, obs)
    max_sweeps = config.sweeps_cold if warm is None else config.sweeps_warm
    pair_rows = np.repeat(np.arange(obs.n_items), np.diff(P.count.indptr))
    nu_r: NDArray[Any] | float = NU_R_MAX
    w = _Sweep(st, st.mu - CENTER, 1.0 / st.var_mu, st.m0 - CENTER)
    sweeps = 0
    for sweeps in range(1, max_sweeps + 1):
        rho = 1.0 / w.st.noise
        moved = _item_step(P, w, rho)
        sums = _annotator_step(P, w.st, w.u, rho)
        if config.nu_r is not None:
            nu_r = config.nu_r
        elif sweeps & (sweeps - 1) == 0:  # sweeps 1, 2, 4, 8, ...: the strengths settle long before the items
            a = w.st
            sweep = dict(u=w.u, prec=w.prec, o=a.offset, s=a.slope, vs=a.var_slope, cos=a.cov_os, rho=rho, q=a.q)
            nu_r = noise_strengths(loo_noise_ratio(P, pair_rows, sweep), P.n_per_annotator)
        _noise_step(P, w, sums, nu_r, config.nu_q)
        if moved < config.tol and sweeps > 1:
            return _fitted(P, w, sweeps, config.nu_q)
    return _fitted(P, w, sweeps, config.nu_q) if warm is None else fit(obs, config=config)


def _item_step(P: PairStats, w: _Sweep, rho: NDArray[Any]) -> float:
    """The items' posteriors and the prior's ``m0``, ``tau_mu^2`` (module docstring); returns the largest move of
    an item mean. With ``w = 1 / (r_a q_i)`` an item's sums are ``(1 / q_i) sum_a C_ia f(a) / r_a``: products of
    the sparse pair statistics with per-annotator vectors."""
    C, st = P.count, w.st
    o, s = st.offset, st.slope
    prec = 1.0 / st.tau_mu2 + (C @ ((s * s + st.var_slope) * rho)) / st.q
    u = (w.m0 / st.tau_mu2 + (P.sum_y @ (s * rho) - C @ ((o * s + st.cov_os) * rho)) / st.q) / prec
    moved = float(np.max(np.abs(u - w.u))) if u.size else 0.0
    w.u, w.prec, st.var_mu = u, prec, 1.0 / prec
    w.m0 = float(u.mean()) if u.size else 0.0
    st.tau_mu2 = max(float(np.mean((u - w.m0) ** 2 + st.var_mu)) if u.size else _FLOOR, _FLOOR)
    return moved


class AnnotatorSums(NamedTuple):
    """The sums over each annotator's items (weights ``h_i = 1 / q_i``) that :func:`_annotator_step` computes and
    :func:`_noise_step` reuses: ``t_h, t_hu, t_huu, t_hvu`` (of ``C_ia`` times ``h, h u, h u^2, h Var u``), ``y_h,
    y_hu`` (of the score sums times ``h, h u``), and ``h`` itself."""

    t_h: NDArray[Any]
    t_hu: NDArray[Any]
    t_huu: NDArray[Any]
    t_hvu: NDArray[Any]
    y_h: NDArray[Any]
    y_hu: NDArray[Any]
    h: NDArray[Any]


def _annotator_step(P: PairStats, st: AwareState, u: NDArray[Any], rho: NDArray[Any]) -> AnnotatorSums:
    """Each annotator's ``(o_a, s_a)`` from the 2 x 2 normal equations, and the prior's ``tau_o^2``, ``tau_s^2``;
    returns the :class:`AnnotatorSums` the noise step reuses."""
    CT, YT = P.count.T, P.sum_y.T
    h = 1.0 / st.q
    hu = h * u
    t_h, t_hu, t_huu, t_hvu = CT @ h, CT @ hu, CT @ (hu * u), CT @ (h * st.var_mu)
    y_h, y_hu = YT @ h, YT @ hu
    s_oo = t_h * rho + 1.0 / st.tau_o2
    s_ss = (t_huu + t_hvu) * rho + 1.0 / st.tau_s2
    s_os = t_hu * rho
    b_o = y_h * rho
    b_s = y_hu * rho + 1.0 / st.tau_s2
    det = s_oo * s_ss - s_os * s_os
    st.offset = (s_ss * b_o - s_os * b_s) / det
    st.slope = (s_oo * b_s - s_os * b_o) / det
    st.var_offset, st.var_slope, st.cov_os = s_ss / det, s_oo / det, -s_os / det
    seen = P.n_per_annotator > 0
    if seen.any():
        st.tau_o2 = float(np.clip(np.mean(st.offset[seen] ** 2 + st.var_offset[seen]), _FLOOR, 0.25))
        st.tau_s2 = float(np.clip(np.mean((st.slope[seen] - 1.0) ** 2 + st.var_slope[seen]), _FLOOR, 1.0))
    return AnnotatorSums(t_h, t_hu, t_huu, t_hvu, y_h, y_hu, h)


def _noise_step(P: PairStats, w: _Sweep, sums: AnnotatorSums, nu_r: NDArray[Any] | float, nu_q: float) -> None:
    """The annotators' unreliability ``r_a`` (shrunk with ``nu_r``, geometric mean 1), the pooled noise ``q0``
    and the items' ambiguity ``q_i`` (shrunk with ``nu_q``) from ``e2 = E[(y - o - s u)^2] = (y - o - s u)^2 +
    Var o + s^2 Var u + Var s E[u^2] + 2 u Cov(o, s)``, summed by annotator (weights ``1 / q_i``: ``sums`` of
    :func:`_annotator_step`) and by item (weights ``1 / r_a``) from the pair sums."""
    t_h, t_hu, t_huu, t_hvu, y_h, y_hu, h = sums
    st, u = w.st, w.u
    o, s, vo, vs, cos = st.offset, st.slope, st.var_offset, st.var_slope, st.cov_os
    e_a = (
        P.sum_y2.T @ h
        - 2.0 * o * y_h
        - 2.0 * s * y_hu
        + o * o * t_h
        + 2.0 * o * s * t_hu
        + s * s * t_huu
        + vo * t_h
        + s * s * t_hvu
        + vs * (t_huu + t_hvu)
        + 2.0 * cos * t_hu
    )
    n_a = P.n_per_annotator
    r = (nu_r + np.maximum(e_a, 0.0)) / (nu_r + n_a)
    if (n_a > 0).any():
        r = r / np.exp(np.mean(np.log(r[n_a > 0])))
    st.noise = r
    rho = 1.0 / r
    C, SY = P.count, P.sum_y
    c4 = [C @ (rho * (o * o + vo)), C @ (rho * (o * s + cos)), C @ (rho * (s * s + vs))]
    y2 = [SY @ (rho * o), SY @ (rho * s)]
    e_i = P.sum_y2 @ rho - 2.0 * y2[0] - 2.0 * u * y2[1] + c4[0] + 2.0 * u * c4[1] + (u * u + st.var_mu) * c4[2]
    e_i = np.maximum(e_i, 0.0)
    rep = P.n_per_item >= 2  # (module docstring)
    st.q0 = max(float(np.where(rep, e_i, 0.0).sum() / P.n_per_item[rep].sum()), _FLOOR)
    st.q = np.maximum((nu_q * st.q0 + e_i) / (nu_q + P.n_per_item), _FLOOR)


def _fitted(P: PairStats, w: _Sweep, sweeps: int, nu_q: float) -> AwareState:
    """The state of a fit: each item's interval adds to ``Var(u_i)`` the annotator terms that touch it (delta
    method; the scores of one annotator on one item share its terms, hence ``C_ia^2``)."""
    st, u = w.st, w.u
    s, rho2 = st.slope, 1.0 / (st.noise * st.noise)
    c3 = [P.count_sq @ (rho2 * s * s * st.var_offset), P.count_sq @ (rho2 * st.var_slope)]
    c3.append(P.count_sq @ (rho2 * s * st.cov_os))
    extra = (c3[0] + u * u * c3[1] + 2.0 * u * c3[2]) / (st.q * w.prec) ** 2
    var = st.var_mu + np.maximum(extra, 0.0)
    out = dataclasses.replace(st, mu=u + CENTER, var=var, count=P.n_per_item, n_scores=P.n_per_annotator)
    return dataclasses.replace(out, m0=w.m0 + CENTER, sweeps=sweeps, nu_q=nu_q)


__all__ = [
    "CENTER",
    "DEFAULT_CONFIG",
    "AwareConfig",
    "AwareState",
    "Observations",
    "PairStats",
    "fit",
]
