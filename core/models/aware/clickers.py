"""Which scores the stopping rule may trust: the probability that each annotator clicks at random
(:func:`clicker_probability`), each item's count of informative scores (:func:`informative_counts`), and the
posterior the stopping rule draws from once the scores of likely clickers are taken out (:func:`informative_state`).

Why the fit alone is not enough: the fit (:mod:`core.models.aware.fit`) down-weights a random clicker through a large
noise ``r_a`` and a slope ``s_a`` pulled toward 0, but only when the clicker's scores meet other annotators' on the
same items. Items scored by clickers alone have the clickers' own means and posteriors as narrow as any noisy
annotator's, and the expected Spearman would count them as known (measurements: docs/studies/code-notes.md).

The test leaves each annotator out: for annotator ``a``, the Pearson correlation ``r_a`` of their scores with
``m = u_i^(-a)``, each item's mean from the other annotators' scores alone (:func:`loo_agreement`). A clicker's
scores are independent of ``m``, also when the other scores of their items come from clickers; a faithful
annotator's follow it. With ``z_a = atanh(r_a)`` and ``v_a = 1 / (n_a - 3)`` (Fisher), a two-component mixture
gives

    P(clicker | z_a) = pi L0 / (pi L0 + (1 - pi) L1),   L0 = N(z_a; 0, v_a),   L1 = N(z_a; z1, t2 + v_a),

with ``pi`` = :data:`CLICKER_PRIOR` and the faithful annotators' agreement ``N(z1, t2)`` fitted by EM over the
annotators (started at the upper quartile; ``z1`` and ``t2`` kept above :data:`AGREEMENT_FLOOR` and
:data:`AGREEMENT_SPREAD`). Without an agreement to measure (fewer than 4 scores, or no one else on their items) the
probability is the prior. Probabilities are rounded to multiples of :data:`PROBABILITY_STEP`, so a faithful
annotator's is exactly 0 and the counts of items they scored stay whole numbers (a store rewrites only the values
that changed). A known limit: clickers with few scores each, alone on the items whose early scores agreed (which
the allocation stops scoring), can agree among themselves beyond chance and pass the test.

References: Fisher (1921), "On the probable error of a coefficient of correlation", Metron 1 (``atanh`` of a
correlation); McLachlan & Peel (2000), *Finite Mixture Models*, chapter 2 (EM for a mixture); Raykar et al. (2010),
"Learning from crowds", JMLR 11 (annotators as a mixture of reliable and random); the stopping rule is
:mod:`core.models.aware.posterior`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.models.aware.data import CENTER, Observations
from easl_toolkit.core.models.aware.fit import AwareState
from easl_toolkit.core.models.aware.noise import loo_item_sums

#: Fewest scores before an annotator can be flagged ``random`` (``core.models.aware.diagnostics``; here, so that what
#: counts as checked is known without SciPy).
RANDOM_MIN_SCORES = 40
#: Prior probability that an annotator clicks at random: even odds, so that an annotator the data cannot check (fewer
#: than 4 scores, or no one else on their items) counts half.
CLICKER_PRIOR = 0.5
#: :func:`clicker_probability` is rounded to multiples of this (1/1024, exact in binary).
PROBABILITY_STEP = 1.0 / 1024.0
#: Least Fisher z of the faithful annotators' mean agreement (correlation 0.3), and least variance of their
#: agreements beyond sampling (a standard deviation of 0.1 in z), so that the two components stay apart.
AGREEMENT_FLOOR, AGREEMENT_SPREAD = 0.30951960420311175, 0.01
#: EM steps of the faithful annotators' agreement (:func:`clicker_probability`).
EM_STEPS = 20
#: Name of the per-item informative counts in a cached state (:meth:`core.models.aware.model.AwareModel.refit`).
INFORMATIVE_KEY = "n_informative"
#: Name of the per-item informative share of the precision in a cached state (:func:`informative_share`).
SHARE_KEY = "informative_share"


def _normal_logpdf(x: NDArray[Any], mean: Any, var: NDArray[Any]) -> NDArray[Any]:
    out: NDArray[Any] = -0.5 * (np.log(2.0 * np.pi * var) + (x - mean) ** 2 / var)
    return out


def loo_agreement(state: AwareState, obs: Observations) -> tuple[NDArray[Any], NDArray[Any]]:
    """Per annotator, the Pearson correlation of their scores with ``u_i^(-a)``, each item's posterior mean from the
    other annotators' scores alone (:func:`core.models.aware.noise.loo_item_sums`; the fit's offsets and slopes
    held, the prior and ``q_i`` taken out, so that a clicker's own pull on either cannot tie it to their scores),
    and the number of scores behind it; NaN with fewer than 3 scores or no spread on either side."""
    na = state.n_annotators
    P = obs.pairs
    rows = np.repeat(np.arange(obs.n_items), np.diff(P.count.indptr))
    sums = {
        "u": state.mu - CENTER,
        "prec": 1.0 / state.var_mu,
        "o": state.offset,
        "s": state.slope,
        "vs": state.var_slope,
        "cos": state.cov_os,
        "rho": 1.0 / state.noise,
        "q": state.q,
    }
    weighted, prec = loo_item_sums(P, rows, sums)
    # the others' scores alone (prior taken out): q_i then cancels, and with it the clicker's own pull on q_i
    data_prec = prec - 1.0 / state.tau_mu2
    others = data_prec > 1e-9 * prec
    m = np.where(others, (weighted - (state.m0 - CENTER) / state.tau_mu2) / np.where(others, data_prec, 1.0), 0.0)
    a, sy, sy2 = P.count.indices, P.sum_y.data, P.sum_y2.data
    c = np.where(others, P.count.data, 0.0)
    sy, sy2 = sy * others, sy2 * others
    n, s_m, s_mm, s_y, s_ym, s_yy = (np.bincount(a, w, na) for w in (c, c * m, c * m * m, sy, sy * m, sy2))
    with np.errstate(invalid="ignore", divide="ignore"):
        sxx = s_mm - s_m * s_m / n
        syy = s_yy - s_y * s_y / n
        r = (s_ym - s_y * s_m / n) / np.sqrt(sxx * syy)
    spread = (sxx > 1e-12 * np.maximum(s_mm, 1e-300)) & (syy > 1e-12 * np.maximum(s_yy, 1e-300))
    return np.where((n >= 3) & spread, np.clip(r, -0.999999, 0.999999), np.nan), n


def clicker_probability(state: AwareState, obs: Observations, *, prior: float = CLICKER_PRIOR) -> NDArray[Any]:
    """Per annotator, the posterior probability of clicking at random given their leave-one-out agreement (module
    docstring, with its references), rounded to :data:`PROBABILITY_STEP`.

    Parameters
    ----------
    state : AwareState
        The fit of ``obs``.
    obs : Observations
    prior : float
        ``pi``, the prior probability; default :data:`CLICKER_PRIOR`.

    Returns
    -------
    ndarray, shape (n_annotators,)

    Examples
    --------
    Two faithful annotators on items 0-19 and two who click at random on items 20-39, the only ones to score them:

    >>> from core.models.aware.fit import fit
    >>> rng = np.random.default_rng(1)
    >>> truth = rng.random(20)
    >>> item = np.r_[np.arange(20), np.arange(20), np.arange(20, 40), np.arange(20, 40)]
    >>> ann = np.repeat([0, 1, 2, 3], 20)
    >>> x = np.r_[truth + rng.normal(0, .05, 20), truth + rng.normal(0, .05, 20), rng.random(40)].clip(0, 1)
    >>> obs = Observations.build(item, ann, x, n_items=40)
    >>> clicker_probability(fit(obs), obs).round(2).tolist()
    [0.0, 0.0, 1.0, 1.0]
    """
    na = state.n_annotators
    if obs.size == 0:
        return np.zeros(na)
    r, n = loo_agreement(state, obs)
    ok = np.isfinite(r) & (n > 3)
    p = np.full(na, prior)
    if ok.any():
        z, v = np.arctanh(r[ok]), 1.0 / (n[ok] - 3.0)
        log_h0 = np.log(prior) + _normal_logpdf(z, 0.0, v)
        z1, t2 = max(float(np.quantile(z, 0.75)), AGREEMENT_FLOOR), AGREEMENT_SPREAD
        for _ in range(EM_STEPS):  # the faithful annotators' agreement: N(z1, t2 + v), fitted by EM
            log_h1 = np.log1p(-prior) + _normal_logpdf(z, z1, t2 + v)
            w1 = 0.5 * (1.0 - np.tanh(0.5 * np.clip(log_h0 - log_h1, -700.0, 700.0)))
            if w1.sum() < 1e-9:
                break
            z1 = max(float(np.sum(w1 * z) / w1.sum()), AGREEMENT_FLOOR)
            t2 = max(float(np.sum(w1 * ((z - z1) ** 2 - v)) / w1.sum()), AGREEMENT_SPREAD)
        log_h1 = np.log1p(-prior) + _normal_logpdf(z, z1, t2 + v)
        p[ok] = 0.5 * (1.0 + np.tanh(0.5 * np.clip(log_h0 - log_h1, -700.0, 700.0)))
    out: NDArray[Any] = np.round(p / PROBABILITY_STEP) * PROBABILITY_STEP
    return out


def informative_counts(obs: Observations, p_clicker: NDArray[Any]) -> NDArray[Any]:
    """Per item, ``n_i^inf = sum_k (1 - P_a(k))`` over its scores: the expected number of them that do not come
    from a random clicker (``p_clicker`` from :func:`clicker_probability`).

    Examples
    --------
    >>> obs = Observations.build([0, 0, 1, 1], [0, 1, 0, 2], [.2, .3, .6, .5], n_items=3)
    >>> informative_counts(obs, np.array([0.0, 1.0, 0.5])).tolist()
    [1.0, 1.5, 0.0]
    """
    out: NDArray[Any] = np.bincount(obs.item, 1.0 - p_clicker[obs.annotator], obs.n_items)
    return out


def informative_share(state: AwareState, obs: Observations, p_clicker: NDArray[Any]) -> NDArray[Any]:
    """Per item, the share of its data's precision that does not come from random clickers:
    ``f_i = sum_k (1 - P_a(k)) w_a(k) / sum_k w_a(k)``, ``w_a = (s_a^2 + Var s_a) / r_a`` the fit's weight of one of
    annotator ``a``'s scores (the item's ``1 / q_i`` cancels); 1 for an item with no scores. The fit already gives a
    clicker it has caught (slope near 0) little weight, so their scores take little of the share."""
    w = ((state.slope**2 + state.var_slope) / state.noise)[obs.annotator]
    total = np.bincount(obs.item, w, obs.n_items)
    kept = np.bincount(obs.item, w * (1.0 - p_clicker[obs.annotator]), obs.n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        share: NDArray[Any] = np.where(total > 0, np.clip(kept / total, 0.0, 1.0), 1.0)
    return share


def informative_arrays(state: AwareState, obs: Observations) -> dict[str, NDArray[Any]]:
    """What the stopping rule needs of the observations, per item (:data:`INFORMATIVE_KEY`: :func:`informative_counts`;
    :data:`SHARE_KEY`: :func:`informative_share`), from :func:`clicker_probability` of the fit ``state``."""
    p = clicker_probability(state, obs)
    return {INFORMATIVE_KEY: informative_counts(obs, p), SHARE_KEY: informative_share(state, obs, p)}


def informative_state(state: AwareState, arrays: Mapping[str, NDArray[Any]]) -> AwareState:
    """The posterior the stopping rule draws from: each item keeps the share ``f_i`` (:data:`SHARE_KEY` of
    ``arrays``) of its data's precision ``A_i = 1 / var_mu_i - 1 / tau_mu^2``, with ``nu_q + n_i^inf`` degrees of
    freedom (:data:`INFORMATIVE_KEY`); without them (a state cached by an older version) ``state`` itself. With the
    prior ``N(m0, tau_mu^2)`` and the data's precision and precision-weighted mean both scaled by ``f_i`` (Gaussian
    conjugacy, as in :func:`core.models.aware.fit`):

        var'_i = 1 / (1 / tau_mu^2 + f_i A_i),
        mu'_i  = m0 + (mu_i - m0) f_i (1 / tau_mu^2 + A_i) / (1 / tau_mu^2 + f_i A_i),

    plus the annotator terms of ``var_i`` unchanged. An item scored by clickers alone is drawn from the prior,
    independent of its estimate; ``f_i = 1`` leaves the item as it is.

    Examples
    --------
    >>> from core.models.aware.fit import fit
    >>> obs = Observations.build([0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 2, 3], [.2, .3, .8, .7, .9, .95], n_items=3)
    >>> st = fit(obs)
    >>> adj = informative_state(st, {INFORMATIVE_KEY: np.array([2.0, 2, 0]), SHARE_KEY: np.array([1.0, 1, 0])})
    >>> bool(adj.mu[2] == st.m0 and adj.var[2] >= st.tau_mu2), bool(adj.mu[0] == st.mu[0])
    (True, True)
    """
    if INFORMATIVE_KEY not in arrays or SHARE_KEY not in arrays:
        return state
    n_inf = np.asarray(arrays[INFORMATIVE_KEY], dtype=np.float64)
    share = np.asarray(arrays[SHARE_KEY], dtype=np.float64)
    if np.all(share == 1.0):
        return dataclasses.replace(state, count=n_inf)
    prior_prec = 1.0 / state.tau_mu2
    data_prec = np.maximum(1.0 / state.var_mu - prior_prec, 0.0)
    prec = prior_prec + share * data_prec
    mu = state.m0 + (state.mu - state.m0) * share * (prior_prec + data_prec) / prec
    var_mu = 1.0 / prec
    var = var_mu + np.maximum(state.var - state.var_mu, 0.0)
    same = share == 1.0
    return dataclasses.replace(
        state,
        mu=np.where(same, state.mu, mu),
        var_mu=np.where(same, state.var_mu, var_mu),
        var=np.where(same, state.var, var),
        count=n_inf,
    )
