"""Posterior models of EASL and its baselines, vectorised over items.

Source: Sakaguchi & Van Durme (2018), "Efficient Online Scalar Annotation with Bounded Support", ACL; equation
numbers in this package refer to it. Herbrich, Minka & Graepel (2006) for TrueSkill.

Four models share one interface (:class:`Model`, :mod:`core.models.base`), one module each:

* ``"easl"``      :mod:`core.models.easl`: Beta posteriors updated directly by scalar scores (eq 24-25).
* ``"ra"``        :mod:`core.models.ra`: bounded online ranking aggregation: Beta posteriors updated by the
                  pairwise outcomes of a HIT (Rao-Kupper probabilities eq 20-22, updates eq 14-19).
* ``"trueskill"`` :mod:`core.models.trueskill`: TrueSkill 1-vs-1 (eq 3-11) on the same pairwise outcomes.
* ``"da"``        :mod:`core.models.da`: direct assessment, the mean of each item's scores.

Shared pieces: :mod:`~core.models.hyper`, :mod:`~core.models.beta` (eq 12-13), :mod:`~core.models.gaussian`
(eq 3-10), :mod:`~core.models.pairs`, :mod:`~core.models.registry` (:func:`get_model`); match quality (eq 11 / 23)
is :func:`core.selection.match_quality`. The annotator-aware model (``"aware"``) is :mod:`core.models.aware_model`.

Models work on the unit interval; :class:`Hyper` converts from and to the project's score range. State is a
``dict`` of float64 arrays of length ``n_items``; every state has ``count`` (the number of observations of each
item, an exact integer in float64).
"""

from core.models.base import Model, Posterior, State
from core.models.beta import beta_interval, beta_mean, beta_mode, beta_variance
from core.models.da import DirectAssessmentModel
from core.models.easl import EaslModel
from core.models.gaussian import Z975, draw_margin, rate_1vs1, v_draw, v_win, w_draw, w_win
from core.models.hyper import METHODS, PARTNER_POOLS, Hyper
from core.models.pairs import PairSchedule, pair_schedule
from core.models.ra import RankAggregationModel, rao_kupper
from core.models.registry import get_model
from core.models.trueskill import TrueSkillModel

__all__ = [
    "METHODS",
    "PARTNER_POOLS",
    "Z975",
    "DirectAssessmentModel",
    "EaslModel",
    "Hyper",
    "Model",
    "PairSchedule",
    "Posterior",
    "RankAggregationModel",
    "State",
    "TrueSkillModel",
    "beta_interval",
    "beta_mean",
    "beta_mode",
    "beta_variance",
    "draw_margin",
    "get_model",
    "pair_schedule",
    "rao_kupper",
    "rate_1vs1",
    "v_draw",
    "v_win",
    "w_draw",
    "w_win",
]
