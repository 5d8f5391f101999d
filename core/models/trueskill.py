"""TrueSkill 1-vs-1 (Herbrich et al. 2006; Sakaguchi & Van Durme 2018, eq 3-11) on the pairwise outcomes of
HIT submissions: the unbounded Gaussian baseline."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from core.models.base import Model, Posterior, State
from core.models.beta import beta_mean, beta_variance
from core.models.gaussian import Z975, _rate_1vs1_var


class TrueSkillModel(Model):
    """TrueSkill 1-vs-1 (Herbrich et al. 2006; eq 3-11) on the pairwise outcomes of HIT submissions
    (:func:`pair_schedule`; ties are draws), the unbounded Gaussian baseline.

    On the unit scale: ``beta = gamma``, draw margin ``= epsilon``, no dynamics (``tau = 0``: an item's
    quality does not drift). Prior: the Gaussian with the mean and variance of Beta(alpha0, beta0), i.e.
    ``mu0 = 0.5`` and ``sigma0^2 = 1/12`` (``sigma0 ~ 0.289``) by default, so that TrueSkill starts from the
    same uncertainty as EASL and RA and Algorithm 1 treats all methods alike. The skill ``mu`` is unbounded
    (the prior's interval is [-0.07, 1.07]), so the summary reports the expected bounded score of one performance,
    ``G(mu)`` with
    ``G(m) ~ E[clip(m + e, 0, 1)]``, ``e ~ N(0, beta^2)`` (:func:`core.models.aware_scale.expected_score`):
    estimate and mean ``G(mu)`` (strictly increasing: the order of ``mu``; ``G(mu) ~ mu`` within 4e-5 for
    ``mu`` in [0.3, 0.7] at ``beta = 0.1``), interval ``[G(mu - 1.96 sigma), G(mu + 1.96 sigma)]``, variance
    ``sigma^2`` (the skill's, as Algorithm 1 and ``easl status`` use it).
    """

    name = "trueskill"
    order_dependent = True
    needs_whole_hit = True

    def init_state(self, n_items: int) -> State:
        a0, b0 = self.hyper.alpha0, self.hyper.beta0
        sigma0 = float(np.sqrt(beta_variance(a0, b0)))
        return {
            "mu": np.full(n_items, float(beta_mean(a0, b0)), dtype=np.float64),
            "sigma2": np.full(n_items, sigma0**2, dtype=np.float64),
            "count": np.zeros(n_items, dtype=np.float64),
        }

    def apply(self, state: State, item: Any, score01: Any, group: Any, sign: int = 1) -> None:
        mu, s2 = state["mu"], state["sigma2"]
        gamma, eps = self.hyper.gamma, self.hyper.epsilon
        for w, lo, drawn in self._pairwise_steps(state, item, score01, group, sign):
            mu[w], s2[w], mu[lo], s2[lo] = _rate_1vs1_var(mu[w], s2[w], mu[lo], s2[lo], gamma, eps, drawn)

    def summary(self, state: State) -> Posterior:
        from core.models.aware_scale import bounded_interval  # here: it loads SciPy

        mu, s2 = state["mu"], state["sigma2"]
        estimate, low, high = bounded_interval(mu, Z975 * np.sqrt(s2), self.hyper.gamma)
        return Posterior(estimate, estimate.copy(), s2.copy(), low, high)

    def selection_keys(self, state: State) -> tuple[NDArray[Any], NDArray[Any]]:
        return state["mu"].copy(), state["sigma2"].copy()
