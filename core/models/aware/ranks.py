"""Rank intervals of large annotator-aware projects: the 95% interval of each item's rank computed from its own
posterior quantiles and the pooled draws of all items, with no rank per draw (:func:`rank_intervals`), and the
posterior draws they and :mod:`core.models.aware.posterior` share (:func:`posterior_draws`).

Above ``core.models.aware.posterior.EAGER_MAX_ITEMS`` items this is how ``easl export`` reads the rank intervals:
one sort of the pooled draws instead of a rank per draw, for the speed of ``easl export`` at scale
(measurements: docs/studies/code-notes.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.models.aware.fit import AwareState

#: :func:`rank_intervals` pools about this many draws (draws x items; at least 2 draws of each item): its
#: estimate of an expected rank has a Monte Carlo sd of at most ``sqrt(N / (4 D))`` ranks, ``N / 2,800`` with
#: ``N D = 2,000,000`` (360 ranks of 1,000,000 items, where a rank interval at 2 scores per item spans some 280,000).
RANK_POOL_VALUES = 2_000_000
#: Points of the grid on which :func:`rank_intervals` tabulates the pooled counts (evenly over the range of the values
#: it looks up, linear between; 512 KiB that stay in the CPU cache), looked up by arithmetic (the export target;
#: measurements: docs/studies/code-notes.md). At 1,000,000 items a grid step spans about 40 ranks.
_GRID = 1 << 16


def posterior_draws(state: AwareState, n_draws: int, rng: np.random.Generator) -> NDArray[Any]:
    """``n_draws`` joint draws of the item scores, shape ``(n_draws, n_items)``: Student t with ``nu_q + n_i``
    degrees of freedom and scale ``sqrt(var_i)`` (``q_i`` is estimated; :attr:`AwareState.df`)."""
    draws: NDArray[Any] = state.mu + np.sqrt(state.var) * rng.standard_t(state.df, size=(n_draws, state.n_items))
    return draws


def pooled_draws(n_items: int, n_draws: int) -> int:
    """Draws of each item that :func:`rank_intervals` pools: ``N D`` about :data:`RANK_POOL_VALUES`, at most
    ``n_draws``, at least 2, even (pairs of draws estimate ``sum_j F_j^2``)."""
    d = int(np.clip(RANK_POOL_VALUES // max(n_items, 1), 2, max(n_draws, 2)))
    return d - d % 2


def _tabulate(values: NDArray[Any], per_item: int, lo: float, hi: float) -> NDArray[Any]:
    """``#{values < g} / per_item`` at the :data:`_GRID` points ``g`` spread evenly over ``[lo, hi]`` (the pooled
    empirical distribution function, scaled: one sort, then a search of the sorted grid)."""
    grid = np.linspace(lo, hi, _GRID)
    counts: NDArray[Any] = np.searchsorted(np.sort(values, axis=None), grid) / per_item
    return counts


def _lookup(table: NDArray[Any], y: NDArray[Any], lo: float, hi: float) -> NDArray[Any]:
    """:func:`_tabulate`'s ``table`` at ``y`` in ``[lo, hi]``, linear between its points (by arithmetic: no search)."""
    pos = (y - lo) * ((_GRID - 1) / (hi - lo))
    np.clip(pos, 0.0, _GRID - 1.0, out=pos)
    at = np.minimum(pos.astype(np.int64), _GRID - 2)
    out: NDArray[Any] = table[at] + (pos - at) * (table[at + 1] - table[at])
    return out


def rank_intervals(
    state: AwareState, rng: np.random.Generator, *, n_draws: int = 200, level: float = 0.95
) -> tuple[NDArray[Any], NDArray[Any]]:
    """The ``level`` interval of each item's rank over the posterior, without ranking any draw.

    Item ``i``'s rank in a posterior draw is ``R_i = #{j != i: x_j < x_i}`` (0 = lowest). The items are
    independent, so given ``x_i = y``, ``R_i`` is a sum of Bernoulli variables with mean ``S_i(y) = sum_{j != i}
    F_j(y)`` and variance ``V_i(y) = sum_{j != i} F_j(y) (1 - F_j(y))``, ``F_j`` item ``j``'s posterior
    distribution function (Student t, :func:`posterior_draws`). ``S_i`` increases, so the ``p`` quantile of
    ``S_i(x_i)`` is ``S_i(y_i(p))`` at the item's own posterior quantile ``y_i(p) = m_i + sqrt(v_i)
    t_{df_i}^{-1}(p)``; the Bernoulli spread is added in quadrature (the variances of independent parts add:
    law of total variance; exact when both parts are normal), with ``c_i = S_i(m_i)`` and ``z = Phi^{-1}(1 - p)``:

        low_i  = c_i - sqrt((c_i - S_i(y_i(p)))^2 + z^2 V_i(y_i(p))),
        high_i = c_i + sqrt((S_i(y_i(1 - p)) - c_i)^2 + z^2 V_i(y_i(1 - p))),   p = (1 - level) / 2,

    clipped to ``[0, N - 1]``. ``S`` and ``sum_j F_j^2`` come from ``D`` pooled draws of every item
    (:func:`pooled_draws`): ``S(y) = #{(d, j): x_j^(d) < y} / D`` and ``sum_j F_j(y)^2 = #{(e, j):
    max(x_j^(2e), x_j^(2e+1)) < y} / (D / 2)``, each from one sort, tabulated on a grid (:data:`_GRID`); item
    ``i``'s own term is exact (``F_i(y_i(p)) = p``). Monte Carlo sd of ``S`` at most ``sqrt(N / (4 D))`` ranks.
    Checked against the quantiles of ranked draws (measurements: docs/studies/code-notes.md).

    Parameters
    ----------
    state : AwareState
    rng : numpy.random.Generator
    n_draws : int, default 200
        Most draws of each item pooled.
    level : float, default 0.95

    Returns
    -------
    (low, high) : ndarray of float64, shape (n_items,)
        The ends of each item's rank interval (0 = the lowest rank).

    References
    ----------
    Hall & Miller (2009), "Using the bootstrap to quantify the authority of an empirical ranking", Ann. Statist.
    37(6B) (an item's rank as a count of the items below it); Wang (1993), "On the number of successes in
    independent trials", Statistica Sinica 3 (mean and variance of a sum of independent Bernoulli variables);
    Casella & Berger (2002), *Statistical Inference*, 2nd ed., theorem 4.4.7 (conditional variance identity).

    Examples
    --------
    >>> from core.models.aware.fit import Observations, fit
    >>> obs = Observations.build([0, 1, 2, 3] * 3, [0] * 4 + [1] * 4 + [2] * 4, [.1, .4, .6, .9] * 3, n_items=4)
    >>> low, high = rank_intervals(fit(obs), np.random.default_rng(0))
    >>> bool(np.all(low <= [0, 1, 2, 3]) and np.all([0, 1, 2, 3] <= high) and high.max() <= 3)
    True
    """
    from statistics import NormalDist

    from scipy import special  # here: easl status never gets this far

    n = state.n_items
    if n == 0:
        return np.zeros(0), np.zeros(0)
    p = (1.0 - level) / 2.0
    df = np.unique(state.df)  # nu_q + n_i: a few values
    half = np.sqrt(state.var) * special.stdtrit(df, 1.0 - p)[np.searchsorted(df, state.df)]
    mu = state.mu
    lo, hi = float(np.min(mu - half)), float(np.max(mu + half))
    hi = hi if hi > lo else lo + 1.0
    d = pooled_draws(n, n_draws)
    draws = posterior_draws(state, d, rng)
    below = _tabulate(draws, d, lo, hi)  # S(y), own term included
    below_sq = _tabulate(np.maximum(draws[0::2], draws[1::2]), d // 2, lo, hi)  # sum_j F_j(y)^2
    del draws
    z2 = NormalDist().inv_cdf(1.0 - p) ** 2
    center = _lookup(below, mu, lo, hi) - 0.5
    ends = []
    for y, own in ((mu - half, p), (mu + half, 1.0 - p)):
        s_full = _lookup(below, y, lo, hi)
        spread = np.maximum(s_full - _lookup(below_sq, y, lo, hi) - own * (1.0 - own), 0.0)
        ends.append(np.sqrt((s_full - own - center) ** 2 + z2 * spread))
    top = max(n - 1, 0)
    return np.clip(center - ends[0], 0, top), np.clip(center + ends[1], 0, top)
