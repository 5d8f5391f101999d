"""The model of a project, by name (``Hyper.method``)."""

from __future__ import annotations

from core.models.base import Model
from core.models.da import DirectAssessmentModel
from core.models.easl import EaslModel
from core.models.hyper import Hyper
from core.models.ra import RankAggregationModel
from core.models.trueskill import TrueSkillModel

#: The incremental models; "aware" is built by :func:`get_model` itself (it refits from the log).
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
        The model of the method bound to ``hyper`` (the package docstring lists them); for "aware",
        :class:`~core.models.aware_model.AwareModel`, which the store refits from the live log with annotator ids
        (``refit_on_change``) instead of applying increments.

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
        from core.models.aware_model import AwareModel  # here: it loads SciPy, which the other models do not need

        # AwareModel has the interface of Model without subclassing it (core/models/aware_model.py)
        return AwareModel(hyper, uniform_passes=hyper.uniform_passes)  # type: ignore[return-value]
    return _MODELS[hyper.method](hyper)
