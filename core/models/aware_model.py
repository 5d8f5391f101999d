"""The annotator-aware model behind the interface a project store uses (registered in
:func:`core.models.get_model` as ``"aware"``).

How it differs from :class:`core.models.base.Model`:

* It is a **fit of every live observation**, not a running sum: the store calls :meth:`AwareModel.refit` with the
  whole live log (item, annotator, score) and the cached state as the warm start. The fit is order independent,
  so retraction is a refit without the retracted rows (no ``sign = -1``).
* The cached state is :meth:`~core.models.aware.AwareState.to_arrays` plus, per item, ``n_informative`` and
  ``informative_share`` (:func:`core.models.aware_clickers.informative_arrays`), which the stopping rule needs
  and only the observations give; a state cached without them (an older file) counts every score until the
  next refit.
* Replay (``easl verify``) is a cold fit of the live log, which reaches the warm chain's fixed point only within
  the fit tolerance: verify compares within :data:`VERIFY_TOLERANCE` posterior sds, not bit for bit.
* :meth:`~AwareModel.next_hits` replaces Algorithm 1 (uniform passes, then expected reduction of mis-ordered
  pairs).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from core.models.aware import DEFAULT_CONFIG, AwareConfig, AwareState, Observations, _prior_state, fit
from core.models.aware_alloc import UNIFORM_PASSES, select_batch
from core.models.aware_clickers import INFORMATIVE_KEY, SHARE_KEY, informative_arrays, informative_state
from core.models.aware_posterior import RankFigures, StopDecision, rank_figures, stop_decision
from core.models.base import Posterior
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

    def __init__(
        self, hyper: Hyper, *, config: AwareConfig = DEFAULT_CONFIG, uniform_passes: int = UNIFORM_PASSES
    ) -> None:
        self.hyper = hyper
        self.config = config
        self.uniform_passes = uniform_passes

    def init_state(self, n_items: int) -> dict[str, NDArray[Any]]:
        """The state of ``n_items`` items with no scores (the priors), as cacheable arrays."""
        empty = np.zeros(0, dtype=np.int64)
        state = _prior_state(Observations.build(empty, empty, np.zeros(0), n_items=n_items)).to_arrays()
        state[INFORMATIVE_KEY], state[SHARE_KEY] = np.zeros(n_items), np.ones(n_items)
        return state

    def apply(self, state: dict[str, NDArray[Any]], item: Any, score01: Any, group: Any, sign: int = 1) -> None:
        """The :class:`~core.models.base.Model` increment: an empty batch changes nothing; any other batch is
        refused, since this model is refitted from the whole live log with annotator ids (:meth:`refit`).

        Raises
        ------
        ValueError
            A non-empty batch.
        """
        if np.asarray(item).size:
            raise ValueError(
                "aware is refitted from the live log with annotator ids (AwareModel.refit), not updated by increments"
            )

    def refit(
        self, state: dict[str, NDArray[Any]] | None, item: Any, annotator: Any, score01: Any, *, n_items: int
    ) -> dict[str, NDArray[Any]]:
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
            The new state, for the cache, with the items' informative counts (module docstring).
        """
        obs = Observations.build(item, annotator, score01, n_items=n_items)
        warm = AwareState.from_arrays(state) if state is not None and obs.size else None
        if warm is not None and (warm.n_items > obs.n_items or warm.n_annotators > obs.n_annotators):
            warm = None  # items or annotators were removed: start cold
        st = fit(obs, warm=warm, config=self.config)
        return {**st.to_arrays(), **informative_arrays(st, obs)}

    def summary(self, state: dict[str, NDArray[Any]]) -> Posterior:
        """The :class:`~core.models.base.Posterior` of the items on [0, 1]
        (:meth:`core.models.aware.AwareState.summary`)."""
        return AwareState.from_arrays(state).summary()

    def selection_keys(self, state: dict[str, NDArray[Any]]) -> tuple[NDArray[Any], NDArray[Any]]:
        """``(mu, variance)`` per item, the variance including the annotator terms."""
        st = AwareState.from_arrays(state)
        return st.mu.copy(), st.var.copy()

    def next_hits(
        self,
        state: dict[str, NDArray[Any]],
        *,
        n_hits: int,
        rng: np.random.Generator,
        exclude: NDArray[Any] | None = None,
    ) -> NDArray[Any]:
        """The next ``n_hits`` HITs of ``hyper.hit_size`` items
        (:func:`core.models.aware_alloc.select_batch`; ``exclude`` marks items that may not be chosen)."""
        return select_batch(
            AwareState.from_arrays(state),
            n_hits=n_hits,
            hit_size=self.hyper.hit_size,
            rng=rng,
            uniform_passes=self.uniform_passes,
            exclude=exclude,
        )

    def rank_figures(self, state: dict[str, NDArray[Any]], rng: np.random.Generator) -> RankFigures:
        """Rank intervals and the expected Spearman with the truth (:func:`core.models.aware_posterior.rank_figures`)
        from the fit's posterior; :meth:`stop_decision` draws the truth without the likely clickers' share."""
        return rank_figures(AwareState.from_arrays(state), rng)

    def stop_decision(self, state: dict[str, NDArray[Any]], rng: np.random.Generator) -> StopDecision | None:
        """The stopping rule's verdict for ``hyper.stop_at`` (:func:`core.models.aware_posterior.stop_decision`,
        with :meth:`expected_spearman`), or None when the project has no target."""
        if self.hyper.stop_at is None:
            return None
        st = AwareState.from_arrays(state)
        rho = self.expected_spearman(state, rng)
        return stop_decision(st, rho, target=self.hyper.stop_at, informative=state.get(INFORMATIVE_KEY))

    def expected_spearman(self, state: dict[str, NDArray[Any]], rng: np.random.Generator) -> float:
        """The expected Spearman with the truth that ``easl status`` reports, with or without a stop target: the
        truth drawn without the likely clickers' share (:func:`core.models.aware_clickers.informative_state`)."""
        st = AwareState.from_arrays(state)
        return rank_figures(st, rng, draws_from=informative_state(st, state)).expected_spearman

    def diagnostics(self, state: dict[str, NDArray[Any]], item: Any, annotator: Any, score01: Any) -> Any:
        """The per-annotator diagnostics of a fit of the live log ``(item, annotator, score01)``
        (:func:`core.models.aware_diagnostics.annotator_diagnostics`), one row per annotator index."""
        from core.models.aware_diagnostics import annotator_diagnostics  # here: it loads SciPy; status needs none

        st = AwareState.from_arrays(state)
        obs = Observations.build(item, annotator, score01, n_items=st.n_items, n_annotators=st.n_annotators)
        return annotator_diagnostics(st, obs)

    @staticmethod
    def same_fit(cached: dict[str, NDArray[Any]], replayed: dict[str, NDArray[Any]]) -> bool:
        """Whether a cached state and a replay agree: estimates within :data:`VERIFY_TOLERANCE` posterior sds."""
        a, b = AwareState.from_arrays(cached), AwareState.from_arrays(replayed)
        if a.n_items != b.n_items:
            return False
        return bool(np.all(np.abs(a.mu - b.mu) <= VERIFY_TOLERANCE * np.sqrt(b.var)))
