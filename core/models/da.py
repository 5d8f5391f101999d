"""Direct assessment (the DA baseline of Sakaguchi & Van Durme 2018, section 5): the mean of each item's scores."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from core.models.base import CommutativeModel, Posterior, State


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
