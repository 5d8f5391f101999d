"""The annotator-aware model behind the interface a project store uses (:class:`core.models.base.Model`,
registered in :func:`core.models.get_model` as ``"aware"``).

How it takes a change of the log (:meth:`AwareModel.update`):

* It is a **fit of every live observation**, not a running sum: every change, an ingest, a retraction or a replay,
  is :meth:`AwareModel.refit` of the whole live log (item, annotator, score; ``LiveLog.live``), warm-started from
  the state given except for a replay and, in a project file (``LiveLog.verified``), up to
  :data:`COLD_REFIT_UPTO` live scores. The fit is order
  independent, so retraction is a refit without the retracted rows (no ``sign = -1``).
* The cached state is :meth:`~core.models.aware.AwareState.to_arrays` plus, per item, ``n_informative`` and
  ``informative_share`` (:func:`core.models.aware.clickers.informative_arrays`), which the stopping rule needs
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

from easl_toolkit.core.models.aware.alloc import UNIFORM_PASSES, select_batch
from easl_toolkit.core.models.aware.clickers import INFORMATIVE_KEY, SHARE_KEY, informative_arrays, informative_state
from easl_toolkit.core.models.aware.fit import DEFAULT_CONFIG, AwareConfig, AwareState, Observations, _prior_state, fit
from easl_toolkit.core.models.aware.posterior import RankFigures, StopDecision, rank_figures, stop_decision
from easl_toolkit.core.models.base import Change, LiveLog, Model, Posterior, Updated
from easl_toolkit.core.models.hyper import Hyper

#: Largest difference between a cached and a replayed estimate, in posterior standard deviations.
VERIFY_TOLERANCE = 0.25
#: Live observations up to which every refit is cold, so the cache is a function of the log alone and equals its
#: replay bit for bit (EM on small, uneven data can have several fixed points, which a warm chain and a cold fit
#: may reach apart). Above it the refit is warm-started and ``easl verify`` compares within :meth:`same_fit`.
COLD_REFIT_UPTO = 1_000_000


class AwareModel(Model):
    """Annotator-aware model behind the store's interface (module docstring).

    Attributes
    ----------
    name : str
        ``"aware"``.
    reads_live_log : bool
        True: every update is a fit of the whole live log with annotator ids.
    bookkeeping : frozenset of str
        ``{"sweeps"}``: the EM sweeps of the last fit, how it got there, not the state.
    """

    name = "aware"
    reads_live_log = True
    bookkeeping = frozenset({"sweeps"})

    def __init__(
        self, hyper: Hyper, *, config: AwareConfig = DEFAULT_CONFIG, uniform_passes: int = UNIFORM_PASSES
    ) -> None:
        super().__init__(hyper)
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

    def update(self, state: dict[str, NDArray[Any]], change: Change, log: LiveLog) -> Updated:
        """:meth:`refit` of the whole live log after any change: cold for a replay, and up to
        :data:`COLD_REFIT_UPTO` live scores of a ``verified`` log; else warm-started from ``state``."""
        live = log.live()
        cold = change.replay or (log.verified and live.item.size <= COLD_REFIT_UPTO)
        warm = None if cold else state
        return Updated(self.refit(warm, live.item, live.annotator, live.score01, n_items=log.n_items), False)

    def slice_rows(self, rows: int, live: int) -> int:
        """At least a quarter of the live scores per slice of a large ingest, so that the refits ending the
        slices cost a bounded multiple of one."""
        return max(rows, live // 4)

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
        (:func:`core.models.aware.alloc.select_batch`; ``exclude`` marks items that may not be chosen)."""
        return select_batch(
            AwareState.from_arrays(state),
            n_hits=n_hits,
            hit_size=self.hyper.hit_size,
            rng=rng,
            uniform_passes=self.uniform_passes,
            exclude=exclude,
        )

    def rank_figures(self, state: dict[str, NDArray[Any]], rng: np.random.Generator) -> RankFigures:
        """Rank intervals and the expected Spearman with the truth (:func:`core.models.aware.posterior.rank_figures`)
        from the fit's posterior; :meth:`stop_decision` draws the truth without the likely clickers' share."""
        return rank_figures(AwareState.from_arrays(state), rng)

    def stop_decision(self, state: dict[str, NDArray[Any]], rng: np.random.Generator) -> StopDecision | None:
        """The stopping rule's verdict for ``hyper.stop_at`` (:func:`core.models.aware.posterior.stop_decision`,
        with :meth:`expected_spearman`), or None when the project has no target."""
        if self.hyper.stop_at is None:
            return None
        st = AwareState.from_arrays(state)
        rho = self.expected_spearman(state, rng)
        return stop_decision(st, rho, target=self.hyper.stop_at, informative=state.get(INFORMATIVE_KEY))

    def expected_spearman(self, state: dict[str, NDArray[Any]], rng: np.random.Generator) -> float:
        """The expected Spearman with the truth that ``easl status`` reports, with or without a stop target: the
        truth drawn without the likely clickers' share (:func:`core.models.aware.clickers.informative_state`)."""
        st = AwareState.from_arrays(state)
        return rank_figures(st, rng, draws_from=informative_state(st, state)).expected_spearman

    def diagnostics(self, state: dict[str, NDArray[Any]], item: Any, annotator: Any, score01: Any) -> Any:
        """The per-annotator diagnostics of a fit of the live log ``(item, annotator, score01)``
        (:func:`core.models.aware.diagnostics.annotator_diagnostics`), one row per annotator index."""
        from easl_toolkit.core.models.aware.diagnostics import (
            annotator_diagnostics,  # here: it loads SciPy; status needs none
        )

        st = AwareState.from_arrays(state)
        obs = Observations.build(item, annotator, score01, n_items=st.n_items, n_annotators=st.n_annotators)
        return annotator_diagnostics(st, obs)

    def stop_figures(self, state: dict[str, NDArray[Any]], rng: np.random.Generator) -> dict[str, Any]:
        """The stopping rule's figures that ``easl status`` reports: ``target, expected_spearman, reached, reason,
        margin, min_scores`` (``E[rho] - margin >= target`` with at least ``min_scores`` scores per item)."""
        from easl_toolkit.core.models.aware.posterior import STOP_MIN_SCORES

        if self.hyper.stop_at is None:
            rho = self.expected_spearman(state, rng)
            reason = "no stop target (set one with easl status PROJECT --set-stop-at RHO)"
            target, reached, margin = None, False, None
        else:
            d = self.stop_decision(state, rng)
            assert d is not None
            target, rho, reached, reason, margin = d.target, d.expected_spearman, bool(d.stop), d.reason, d.margin
        return {
            "target": target,
            "expected_spearman": rho,
            "reached": reached,
            "reason": reason,
            "margin": margin,
            "min_scores": STOP_MIN_SCORES,
        }

    def same_state(
        self, cached: dict[str, NDArray[Any]], replayed: dict[str, NDArray[Any]], max_abs_diff: float
    ) -> tuple[bool, str | None]:
        """:meth:`same_fit` (a warm chain and a cold fit agree within the fit's tolerance, not bit for bit)."""
        try:
            ok = self.same_fit(cached, replayed)
        except (KeyError, ValueError):
            ok = False
        return ok, f"estimates within {VERIFY_TOLERANCE:g} posterior sd (a cold refit against the warm-started cache)"

    @staticmethod
    def same_fit(cached: dict[str, NDArray[Any]], replayed: dict[str, NDArray[Any]]) -> bool:
        """Whether a cached state and a replay agree: estimates within :data:`VERIFY_TOLERANCE` posterior sds."""
        a, b = AwareState.from_arrays(cached), AwareState.from_arrays(replayed)
        if a.n_items != b.n_items:
            return False
        return bool(np.all(np.abs(a.mu - b.mu) <= VERIFY_TOLERANCE * np.sqrt(b.var)))
