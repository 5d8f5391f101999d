"""EASL: Beta posteriors updated directly by scalar scores (Sakaguchi & Van Durme 2018, section 4, eq 24-25)."""

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
