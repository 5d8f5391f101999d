"""The evaluation pipeline behind ``easl evaluate``: :func:`evaluate` takes the responses x raters human matrix and
the system score vectors down the stages of :mod:`core.metrics`, one call each, and returns a typed
:class:`~core.metrics.results.Evaluation`:

1. :func:`~core.metrics.prepare.prepare`: the score policy per rating, the reference responses, the scale;
2. :func:`~core.metrics.estimates.comparisons.build`: the comparisons the registry asks for, each on its own
   responses and raters; :func:`~core.metrics.estimates.comparisons.point_estimates` finishes every figure;
3. :func:`~core.metrics.intervals.agreement_variance.closed_form_intervals`: closed-form se, intervals and p-values;
4. :func:`~core.metrics.bootstrap.bootstrap_comparisons`: the same figures on every resample;
5. :func:`~core.metrics.assemble.assemble`: the result objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numpy.typing import ArrayLike, NDArray

from easl_toolkit.core.metrics.assemble import assemble
from easl_toolkit.core.metrics.bootstrap import bootstrap_comparisons
from easl_toolkit.core.metrics.estimates.comparisons import build, point_estimates
from easl_toolkit.core.metrics.intervals.agreement_variance import closed_form_intervals
from easl_toolkit.core.metrics.options import EvaluationOptions
from easl_toolkit.core.metrics.prepare import prepare
from easl_toolkit.core.metrics.registry import report_weightings
from easl_toolkit.core.metrics.results import Evaluation

DEFAULT_OPTIONS = EvaluationOptions()  #: the options of an evaluation given none


def evaluate(
    human: ArrayLike,
    system: dict[str, NDArray[Any]],
    *,
    human_names: list[str] | None = None,
    groups: ArrayLike | None = None,
    group_name: str = "group",
    options: EvaluationOptions = DEFAULT_OPTIONS,
    progress: Callable[[int, int], None] | None = None,
    extra_notes: list[str] | None = None,
) -> Evaluation:
    """Every metric for every system against the human ratings, with reasons, cautions and intervals.

    Each metric uses the responses and raters it declares (:mod:`core.metrics.registry`): the comparisons with the
    first human column drop responses without that score (RSMTool); all-raters and true-score metrics keep the rest.

    Parameters
    ----------
    human : array of shape (n, R)
        Human ratings, NaN for missing; column 0 is the reference human (RSMTool's ``human_score_column``).
    system : dict name -> array of shape (n,)
    human_names, group_name : the names of the human columns and of the group column in the report
    groups : subgroup labels (n,) for DSM by subgroup and fairness
    options : EvaluationOptions
        Scale, zero policy, rater error variance, bootstrap, confidence, population size, base group, weightings.
    progress, extra_notes : callable(done, total) for the bootstrap; notes to put first (e.g. from the reader)

    Returns
    -------
    Evaluation (typed results; :meth:`Evaluation.to_json` gives the JSON object of ``easl evaluate --json``)

    References
    ----------
    RSMTool "Evaluation metrics" (docs/design.md 4.2); Loukina et al. (2020), App. B; Gwet (2014); Krippendorff (2011).

    Examples
    --------
    >>> ev = evaluate([[1, 1], [2, 2], [3, 2], [4, 4], [2, 3], [3, 3]], {"m": [1.2, 2.1, 2.7, 3.6, 2.4, 3.1]})
    >>> round(ev.systems["m"].observed["corr"].value, 4)
    0.9731
    """
    o = options
    p = prepare(
        human,
        system,
        human_names=human_names,
        scale=o.scale,
        groups=groups,
        exclude_zeros=o.exclude_zeros,
        notes=extra_notes,
    )
    comp = build(p, rater_error_variance=o.rater_error_variance, weightings=report_weightings(o.weights, p.cats))
    point = point_estimates(comp)
    closed = closed_form_intervals(comp, point, confidence=o.confidence, population_size=o.population_size)
    samples = bootstrap_comparisons(comp, o.n_bootstrap, o.seed, progress, p.notes)
    return assemble(p, comp, point, closed, samples, options=o, group_name=group_name)
