"""The models updated directly by scalar scores (Sakaguchi & Van Durme 2018): EASL's Beta posteriors (section 4,
eq 24-25) and the direct-assessment baseline (section 5), the mean of each item's scores."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from core.models.base import CommutativeModel, Posterior, State
from core.models.beta import beta_interval, beta_mean, beta_mode, beta_variance


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
