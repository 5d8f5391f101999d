"""The annotator-aware model behind the interface a project store uses (issue 10; not registered in
:func:`core.models.get_model` until the store can pass annotator ids and refit, see below).

How it differs from :class:`core.models.base.Model`, and how a store caches and replays it:

* ``apply`` adds a batch to a running sum; this model is instead a **fit of every live observation**, so the
  store calls :meth:`AwareModel.refit` with the whole live log (item, annotator, score) and the cached state as
  the warm start. The fit is order independent (observations are put in canonical order), so retraction is a
  refit without the retracted rows: no ``sign = -1``.
* The cached state is :meth:`~core.models.aware.AwareState.to_arrays`: named float64 arrays (per item, per
  annotator, and length-1 scalars), the same ``state`` table form as the other models; ``state_seq`` says which
  log position it reflects.
* Replay (``easl verify``) is a cold fit of the live log. A warm-started chain and a cold fit reach the same
  fixed point only within the fit tolerance, so verify compares with a tolerance (``VERIFY_TOLERANCE`` in units
  of each item's posterior sd), not bit for bit; the orders of rows never matter.
* :meth:`summary` and :meth:`selection_keys` answer as the other models do (unit scale); :meth:`next_hits`
  replaces Algorithm 1 (uniform passes, then expected reduction of mis-ordered pairs).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.models.aware import DEFAULT_CONFIG, AwareConfig, AwareState, Observations, _prior_state, fit
from core.models.aware_alloc import UNIFORM_PASSES, select_batch
from core.models.hyper import Hyper

#: Largest difference between a cached and a replayed estimate, in posterior standard deviations.
VERIFY_TOLERANCE = 0.25


class AwareModel:
    """Annotator-aware model with a store-facing interface (module docstring).

    Attributes
    ----------
    name : str
        ``"aware"``.
    order_dependent, needs_whole_hit : bool
        False: the fit depends on the set of observations only.
    needs_annotator, refit_on_change : bool
        True: the store passes annotator ids and refits instead of applying increments.
    """

    name = "aware"
    order_dependent = False
    needs_whole_hit = False
    needs_annotator = True
    refit_on_change = True

    def __init__(self, hyper: Hyper, *, config: AwareConfig = DEFAULT_CONFIG,
                 uniform_passes: int = UNIFORM_PASSES) -> None:
        self.hyper = hyper
        self.config = config
        self.uniform_passes = uniform_passes

    def init_state(self, n_items: int) -> dict[str, np.ndarray]:
        """The state of ``n_items`` items with no scores (the priors), as cacheable arrays."""
        empty = np.zeros(0, dtype=np.int64)
        return _prior_state(Observations.build(empty, empty, np.zeros(0), n_items=n_items)).to_arrays()

    def refit(self, state: dict[str, np.ndarray] | None, item: Any, annotator: Any, score01: Any, *,
              n_items: int) -> dict[str, np.ndarray]:
        """Fit every live observation, warm-started from ``state`` (``None``: cold, as a replay does).

        Parameters
        ----------
        state : dict of ndarray or None
            The cached state (:meth:`init_state` or an earlier :meth:`refit`).
        item, annotator, score01 : array_like, shape (n,)
            The whole live log: item index, annotator index (0-based, dense), score on [0, 1].
        n_items : int

        Returns
        -------
        dict of ndarray
            The new state, for the cache.
        """
        obs = Observations.build(item, annotator, score01, n_items=n_items)
        warm = AwareState.from_arrays(state) if state is not None and obs.size else None
        if warm is not None and (warm.n_items > obs.n_items or warm.n_annotators > obs.n_annotators):
            warm = None  # items or annotators were removed: start cold
        return fit(obs, warm=warm, config=self.config).to_arrays()

    def summary(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``estimate, mean, variance, ci_low, ci_high`` per item on [0, 1] (see
        :meth:`core.models.aware.AwareState.summary`)."""
        return AwareState.from_arrays(state).summary()

    def selection_keys(self, state: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """``(mu, variance)`` per item, the variance including the annotator terms."""
        st = AwareState.from_arrays(state)
        return st.mu.copy(), st.var.copy()

    def next_hits(self, state: dict[str, np.ndarray], *, n_hits: int, rng: np.random.Generator) -> np.ndarray:
        """The next ``n_hits`` HITs of ``hyper.hit_size`` items
        (:func:`core.models.aware_alloc.select_batch`)."""
        return select_batch(AwareState.from_arrays(state), n_hits=n_hits, hit_size=self.hyper.hit_size, rng=rng,
                            uniform_passes=self.uniform_passes)

    @staticmethod
    def same_fit(cached: dict[str, np.ndarray], replayed: dict[str, np.ndarray]) -> bool:
        """Whether a cached state and a replay agree: estimates within :data:`VERIFY_TOLERANCE` posterior sds."""
        a, b = AwareState.from_arrays(cached), AwareState.from_arrays(replayed)
        if a.n_items != b.n_items:
            return False
        return bool(np.all(np.abs(a.mu - b.mu) <= VERIFY_TOLERANCE * np.sqrt(b.var)))
