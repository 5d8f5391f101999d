"""Bounded online ranking aggregation (Sakaguchi & Van Durme 2018, section 3.2): Beta posteriors updated by the
pairwise outcomes of a HIT (Rao-Kupper probabilities eq 20-22, updates eq 14-19)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from core.models.base import State
from core.models.beta import beta_mode, beta_variance
from core.models.easl import EaslModel


def rao_kupper(m_i: Any, m_j: Any, epsilon: float) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """Win / loss / tie probabilities of Bradley-Terry with Rao-Kupper ties (eq 20-22): with ``pi = exp(M)``,
    ``theta = exp(epsilon)``, ``p(i > j) = pi_i / (pi_i + theta pi_j)``, ``p(i < j) = pi_j / (theta pi_i + pi_j)``,
    ``p(tie) = (theta^2 - 1) pi_i pi_j / ((pi_i + theta pi_j)(theta pi_i + pi_j))``; the three sum to 1.

    Parameters
    ----------
    m_i, m_j : array_like of float
        Locations (the Beta modes, eq 12) of the two items; broadcast together.
    epsilon : float
        Tie margin (> 0).

    Returns
    -------
    (p_win, p_loss, p_tie) : tuple of ndarray of float64
        ``p(i > j)``, ``p(i < j)``, ``p(tie)``, each in ``(0, 1)``.

    References
    ----------
    Rao & Kupper (1967), "Ties in paired-comparison experiments", JASA; Sakaguchi & Van Durme (2018), eq 20-22.

    Examples
    --------
    >>> [round(float(p), 6) for p in rao_kupper(0.5, 0.5, 0.1)]
    [0.475021, 0.475021, 0.049958]
    """
    pi_i = np.exp(np.asarray(m_i, dtype=np.float64))
    pi_j = np.exp(np.asarray(m_j, dtype=np.float64))
    theta = math.exp(epsilon)
    d1 = pi_i + theta * pi_j
    d2 = theta * pi_i + pi_j
    return pi_i / d1, pi_j / d2, (theta * theta - 1.0) * pi_i * pi_j / (d1 * d2)


class RankAggregationModel(EaslModel):
    """Bounded online ranking aggregation (section 3.2): Beta posteriors updated by the pairwise outcomes
    of each HIT submission (:func:`pair_schedule`).

    With ``M`` the mode (eq 12), ``sigma^2`` the Beta variance (eq 13), ``c^2 = 2 gamma^2 + sigma_i^2 +
    sigma_j^2`` and the Rao-Kupper probabilities of :func:`rao_kupper` (eq 20-22):

    * ``i > j``: ``alpha_i += sigma_i^2 / c (1 - p(i > j))``, ``beta_j += sigma_j^2 / c (1 - p(i > j))``
      (eq 14-15; ``p(j < i) = p(i > j)``);
    * tie, ``|M_i - M_j| > epsilon``: the higher item's ``beta`` and the lower item's ``alpha`` grow by
      ``sigma^2 / c (1 - p(tie))`` (eq 16-17);
    * tie, ``|M_i - M_j| <= epsilon``: ``alpha`` and ``beta`` of both grow by ``sigma^2 / c (1 - p(tie))``
      (eq 18-19).

    Both items of a pair are updated from their values before the pair. ``alpha``, ``beta`` never decrease.
    """

    name = "ra"
    order_dependent = True
    needs_whole_hit = True

    def apply(self, state: State, item: Any, score01: Any, group: Any, sign: int = 1) -> None:
        for i, j, tie in self._pairwise_steps(state, item, score01, group, sign):
            self._update_pairs(state, i, j, ~tie)

    def _update_pairs(self, state: State, i: NDArray[Any], j: NDArray[Any], win: NDArray[Any]) -> None:
        """Apply item-disjoint pairs at once (eq 14-22); ``i`` won against ``j`` where ``win``, else a tie.
        Each item's increments use its values before the pair."""
        alpha, beta = state["alpha"], state["beta"]
        ai, bi, aj, bj = alpha[i], beta[i], alpha[j], beta[j]
        mi, mj = beta_mode(ai, bi), beta_mode(aj, bj)  # eq 12
        vi, vj = beta_variance(ai, bi), beta_variance(aj, bj)  # eq 13
        gamma, eps = self.hyper.gamma, self.hyper.epsilon
        c = np.sqrt(2.0 * gamma * gamma + vi + vj)
        p_win, _, p_tie = rao_kupper(mi, mj, eps)
        f = 1.0 - np.where(win, p_win, p_tie)
        inc_i = vi / c * f
        inc_j = vj / c * f
        # win (eq 14-15): alpha_i, beta_j. Tie, |D| <= eps (eq 18-19): all four. Tie, |D| > eps (eq 16-17):
        # the higher item's beta and the lower item's alpha.
        near = np.abs(mi - mj) <= eps
        hi_i = mi > mj
        a_i = win | near | ~hi_i  # alpha_i and beta_j grow
        b_i = ~win & (near | hi_i)  # beta_i and alpha_j grow
        alpha[i] = ai + inc_i * a_i
        beta[i] = bi + inc_i * b_i
        alpha[j] = aj + inc_j * b_i
        beta[j] = bj + inc_j * a_i
