"""EASL and the two baselines that share its state (Sakaguchi & Van Durme 2018): EASL's Beta posteriors updated
directly by scalar scores (section 4, eq 24-25); bounded online ranking aggregation, the same Beta posteriors updated
by the pairwise outcomes of a HIT (section 3.2: Rao-Kupper probabilities eq 20-22, updates eq 14-19); and direct
assessment (section 5), the mean of each item's scores."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.models.base import CommutativeModel, PairwiseModel, Posterior, State
from easl_toolkit.core.models.beta import beta_interval, beta_mean, beta_mode, beta_variance


class EaslModel(CommutativeModel):
    """EASL (section 4): item ``i`` is Beta(alpha_i, beta_i); a score ``s`` in ``[0, 1]`` adds
    ``alpha_i += s``, ``beta_i += 1 - s`` (eq 24-25). Commutative, so ``sign = -1`` retracts; an item whose
    count returns to 0 is reset to the prior exactly. Estimate: the mode (eq 12); variance eq 13; 95%
    equal-tailed credible interval from Beta quantiles, widened to the mode where the mode lies outside it
    (an item scored only 0 or only 1 keeps ``alpha`` or ``beta`` at 1, so its mode is 0 or 1, up to 0.025 beyond
    the equal-tailed interval: ``Beta(1, 1 + k)`` has ``ci_low = 1 - 0.975^(1 / (1 + k))``); the mode is clipped
    to [0, 1] (retraction can leave ``alpha`` or ``beta`` a rounding error below 1).
    """

    name = "easl"

    def prior(self) -> dict[str, float]:
        return {"alpha": self.hyper.alpha0, "beta": self.hyper.beta0, "count": 0.0}

    def sums(self, item: NDArray[Any], score: NDArray[Any], n_items: int) -> dict[str, NDArray[Any]]:
        s_sum = np.bincount(item, weights=score, minlength=n_items)
        c_sum = np.bincount(item, minlength=n_items).astype(np.float64)
        return {"alpha": s_sum, "beta": c_sum - s_sum, "count": c_sum}

    def summary(self, state: State) -> Posterior:
        a, b = state["alpha"], state["beta"]
        lo, hi = beta_interval(a, b)
        mode = np.clip(beta_mode(a, b), 0.0, 1.0)
        return Posterior(mode, beta_mean(a, b), beta_variance(a, b), np.minimum(lo, mode), np.maximum(hi, mode))

    def selection_keys(self, state: State) -> tuple[NDArray[Any], NDArray[Any]]:
        a, b = state["alpha"], state["beta"]
        return beta_mode(a, b), beta_variance(a, b)


class DirectAssessmentModel(CommutativeModel):
    """Direct assessment (section 5's DA baseline): each item's estimate is the mean of its scores.

    State: ``sum``, ``sumsq``, ``count``. With fewer than 2 scores the variance is the prior's, 1/12 (the
    variance of a uniform score); with one score the estimate is that score, with none it is 0.5 (prior
    placeholder). From 2 scores on, the variance is the sample variance of the mean, ``s^2 / n`` (a residual sum
    of squares below 1e-12 of the sum of squares counts as 0: rounding noise of equal scores), and the 95%
    interval is ``mean -+ t_{0.975, n-1} sqrt(s^2 / n)`` clipped to [0, 1]; below 2 scores it is the uniform
    prior's [0.025, 0.975], widened to a single score outside it (a score of 0 or 1). The mean is clipped to
    [0, 1] (retraction can leave a sum a rounding error below 0). Commutative: ``sign = -1`` retracts (an item
    back at count 0 is reset exactly).
    DA's batches are chosen by count (:func:`core.selection.select_least_annotated`).
    """

    name = "da"

    def prior(self) -> dict[str, float]:
        return {"sum": 0.0, "sumsq": 0.0, "count": 0.0}

    def sums(self, item: NDArray[Any], score: NDArray[Any], n_items: int) -> dict[str, NDArray[Any]]:
        return {
            "sum": np.bincount(item, weights=score, minlength=n_items),
            "sumsq": np.bincount(item, weights=score * score, minlength=n_items),
            "count": np.bincount(item, minlength=n_items),
        }

    def _mean_var(self, state: State) -> tuple[NDArray[Any], NDArray[Any]]:
        n = state["count"]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.clip(np.where(n > 0, state["sum"] / np.maximum(n, 1.0), 0.5), 0.0, 1.0)
            # residual sum of squares; below 1e-12 of the sum of squares it is rounding noise (constant scores)
            resid = state["sumsq"] - state["sum"] * mean
            resid = np.where(resid > 1e-12 * state["sumsq"], resid, 0.0)
            s2 = resid / np.maximum(n - 1.0, 1.0)
            var = np.where(n >= 2, s2 / np.maximum(n, 1.0), 1.0 / 12.0)
        return mean, var

    def summary(self, state: State) -> Posterior:
        n = state["count"]
        mean, var = self._mean_var(state)
        from scipy import special

        tq = special.stdtrit(np.maximum(n - 1.0, 1.0), 0.975)  # Student t quantile
        half = tq * np.sqrt(var)
        many = n >= 2
        lo = np.where(many, np.clip(mean - half, 0.0, 1.0), np.minimum(0.025, mean))
        hi = np.where(many, np.clip(mean + half, 0.0, 1.0), np.maximum(0.975, mean))
        return Posterior(mean, mean.copy(), var, lo, hi)

    def selection_keys(self, state: State) -> tuple[NDArray[Any], NDArray[Any]]:
        return self._mean_var(state)

    def next_hits(
        self, state: State, *, n_hits: int, rng: np.random.Generator, exclude: NDArray[Any] | None = None
    ) -> NDArray[Any]:
        """The least annotated items, in HITs (:func:`core.selection.select_least_annotated`)."""
        from easl_toolkit.core.selection import select_least_annotated

        hits = select_least_annotated(
            state["count"], hit_size=self.hyper.hit_size, n_hits=n_hits, rng=rng, exclude=exclude
        )
        return np.asarray(hits, dtype=np.int64)


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


class RankAggregationModel(PairwiseModel, EaslModel):
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
    answer = "ranking"

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
