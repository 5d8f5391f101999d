"""The evaluation pipeline behind ``easl evaluate``: :func:`evaluate` takes the responses x raters human matrix and
the system score vectors down the stages of :mod:`core.metrics`, one call each, and returns a typed
:class:`~core.metrics.results.Evaluation`:

1. :func:`~core.metrics.prepare.prepare` applies the explicit score policy per rating, marks the responses of the
   comparisons with the first human column, and fixes the scale;
2. :func:`~core.metrics.estimates.comparisons.build` declares the comparisons the registry asks for (each on its own
   responses and raters) and :func:`~core.metrics.estimates.comparisons.point_estimates` finishes every figure;
3. :func:`~core.metrics.intervals.closed_form.closed_form_intervals` adds the closed-form standard errors,
   intervals and p-values;
4. :func:`~core.metrics.bootstrap.bootstrap_comparisons` finishes the same figures on every resample;
5. :func:`~core.metrics.assemble.assemble` turns values, reasons and intervals into the result objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numpy.typing import ArrayLike, NDArray

from core.metrics.assemble import assemble
from core.metrics.bootstrap import bootstrap_comparisons
from core.metrics.data import Scale, Weights
from core.metrics.estimates.comparisons import build, point_estimates
from core.metrics.intervals.closed_form import closed_form_intervals
from core.metrics.prepare import prepare
from core.metrics.registry import report_weightings
from core.metrics.results import Evaluation


def evaluate(
    human: ArrayLike,
    system: dict[str, NDArray[Any]],
    *,
    human_names: list[str] | None = None,
    scale: Scale | None = None,
    groups: ArrayLike | None = None,
    group_name: str = "group",
    exclude_zeros: bool = False,
    rater_error_variance: float | None = None,
    n_bootstrap: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
    population_size: float | None = None,
    base_group: str | None = None,
    weights: tuple[Weights, ...] = (),
    progress: Callable[[int, int], None] | None = None,
    extra_notes: list[str] | None = None,
) -> Evaluation:
    """Every metric for every system against the human ratings, with reasons, cautions and intervals.

    Each metric uses the responses and raters it declares (:mod:`core.metrics.registry`): the comparisons with
    the first human column drop responses without that score (RSMTool), the agreement among all raters and the
    true-score metrics keep every rated response.

    Parameters
    ----------
    human : array of shape (n, R)
        Human ratings, NaN for missing; column 0 is the reference human (RSMTool's ``human_score_column``).
    system : dict name -> array of shape (n,)
    human_names : list of str, optional
    scale : Scale, optional
        Explicit scale. Default: [min, max] of the human scores after the policy, with a note saying so.
    groups : array of shape (n,), optional
        Subgroup labels for DSM by subgroup and the fairness analyses.
    exclude_zeros : bool, default False
        0 is not a score: responses whose first human score is 0 leave the comparisons with the first human
        column, other 0 ratings become missing (RSMTool's default).
    rater_error_variance : float, optional
        V_e from another sample for the true-score metrics.
    n_bootstrap : int, default 0
        Bootstrap resamples (0: none); percentile intervals at ``confidence``.
    seed : int, default 0
        Seed of the one ``numpy.random.Generator`` used for resampling.
    confidence : float, default 0.95
    weights : tuple of str, default ()
        More weightings for the all-raters coefficients beside identity, linear and quadratic (irrCAC's
        ``ordinal``, ``radical``, ``ratio``, ``circular``, ``bipolar``); ``ratio`` needs categories other than 0.
    base_group : str, optional
        Reference level of the fairness models' group coefficients (RSMTool's ``base_group``; default the
        largest group).
    population_size : float, optional
        Number of responses in the population, for the finite-population correction of the analytic standard
        errors of the chance-corrected coefficients (Gwet 2014, section 5.3; irrCAC's ``N``).
    progress : callable(done, total), optional
    extra_notes : list of str, optional
        Notes to put first (e.g. from the file reader).

    Returns
    -------
    Evaluation
        Typed results; :meth:`Evaluation.to_json` gives the JSON object of ``easl evaluate --json``.

    References
    ----------
    RSMTool documentation, "Evaluation metrics" (docs/design.md section 4.2); Loukina et al. (2020), Appendix B (PRMSE);
    Gwet (2014) and Krippendorff (2011) (agreement); Efron & Tibshirani (1993) (bootstrap).

    Examples
    --------
    >>> import numpy as np
    >>> h = np.array([[1, 1], [2, 2], [3, 2], [4, 4], [2, 3], [3, 3.]])
    >>> ev = evaluate(h, {"model": np.array([1.2, 2.1, 2.7, 3.6, 2.4, 3.1])}, scale=Scale(1, 4))
    >>> round(ev.systems["model"].observed["corr"].value, 4)
    0.9731
    """
    p = prepare(
        human,
        system,
        human_names=human_names,
        scale=scale,
        groups=groups,
        exclude_zeros=exclude_zeros,
        notes=extra_notes,
    )
    comp = build(p, rater_error_variance=rater_error_variance, weightings=report_weightings(weights, p.cats))
    point = point_estimates(comp)
    closed = closed_form_intervals(comp, point.values, confidence=confidence, population_size=population_size)
    samples = bootstrap_comparisons(comp, n_bootstrap, seed, progress, p.notes)
    return assemble(
        p,
        comp,
        point,
        closed,
        samples,
        n_resamples=n_bootstrap,
        seed=seed,
        confidence=confidence,
        group_name=group_name,
        rater_error_variance=rater_error_variance,
        base_group=base_group,
    )
