"""Posterior models of EASL and its baselines, vectorised over items.

Source: Sakaguchi & Van Durme (2018), "Efficient Online Scalar Annotation with Bounded Support", ACL; equation
numbers in this package refer to it. Herbrich, Minka & Graepel (2006) for TrueSkill.

Five models share one interface (:class:`Model`, :mod:`core.models.base`); the store hands each every change of
its live log through :meth:`Model.update` and never asks which kind it holds:

* ``"easl"``      :mod:`core.models.easl`: Beta posteriors updated directly by scalar scores (eq 24-25).
* ``"ra"``        :mod:`core.models.easl`: bounded online ranking aggregation: Beta posteriors updated by the
                  pairwise outcomes of a HIT (Rao-Kupper probabilities eq 20-22, updates eq 14-19).
* ``"trueskill"`` :mod:`core.models.gaussian`: TrueSkill 1-vs-1 (eq 3-11) on the same pairwise outcomes, beside its
                  Gaussian factors (eq 3-10).
* ``"da"``        :mod:`core.models.easl`: direct assessment, the mean of each item's scores.

Shared pieces: :mod:`~core.models.hyper`, :mod:`~core.models.beta` (eq 12-13), :mod:`~core.models.pairs`;
:func:`get_model` (below) builds a project's model; match quality (eq 11 / 23) is
:func:`core.selection.match_quality`.

* ``"aware"``     :mod:`core.models.aware.model`: the annotator-aware model, a fit of the whole live log with each
                  annotator's offset, slope and reliability (the default).
* ``"campaign"``  :mod:`core.models.campaign`: an evaluation campaign, the annotator-aware model over responses
                  carrying scoring systems' scores, whose iterations are drawn with recorded probabilities.

Models work on the unit interval; :class:`Hyper` converts from and to the project's score range. State is a
``dict`` of float64 arrays of length ``n_items``; every state has ``count`` (the number of observations of each
item, an exact integer in float64).
"""

from __future__ import annotations

from easl_toolkit.core.models.base import ArraysLog, Change, LiveLog, Model, Posterior, Scores, State, Updated
from easl_toolkit.core.models.beta import beta_interval, beta_mean, beta_mode, beta_variance
from easl_toolkit.core.models.easl import DirectAssessmentModel, EaslModel, RankAggregationModel, rao_kupper
from easl_toolkit.core.models.gaussian import Z975, TrueSkillModel, draw_margin, rate_1vs1, v_draw, v_win, w_draw, w_win
from easl_toolkit.core.models.hyper import METHODS, PARTNER_POOLS, Hyper
from easl_toolkit.core.models.pairs import PairSchedule, pair_schedule

__all__ = [
    "METHODS",
    "ArraysLog",
    "Change",
    "LiveLog",
    "Scores",
    "Updated",
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

#: The paper's models; "aware" is built by :func:`get_model` itself (importing it loads SciPy).
_MODELS: dict[str, type[Model]] = {
    "easl": EaslModel,
    "ra": RankAggregationModel,
    "trueskill": TrueSkillModel,
    "da": DirectAssessmentModel,
}


def get_model(hyper: Hyper) -> Model:
    """The posterior model named by ``hyper.method``.

    Parameters
    ----------
    hyper : Hyper
        The project's hyper-parameters; ``hyper.method`` is one of :data:`core.models.METHODS`.

    Returns
    -------
    Model
        The model of the method bound to ``hyper`` (the package docstring lists them).

    References
    ----------
    Sakaguchi & Van Durme (2018), sections 3-5 (the four methods compared there).

    Examples
    --------
    >>> m = get_model(Hyper())
    >>> s = m.init_state(2)
    >>> m.apply(s, [0], [0.8], [0])
    >>> summ = m.summary(s)
    >>> round(float(summ.estimate[0]), 12), round(float(summ.variance[0]), 12)  # Beta(1.8, 1.2)
    (0.8, 0.06)
    """
    if hyper.method == "aware":
        from easl_toolkit.core.models.aware.model import (
            AwareModel,  # here: it loads SciPy, which the other models do not need
        )

        return AwareModel(hyper, uniform_passes=hyper.uniform_passes)
    if hyper.method == "campaign":
        from easl_toolkit.core.models.campaign import CampaignModel  # (loads SciPy, as aware does)

        return CampaignModel(hyper)
    return _MODELS[hyper.method](hyper)
