"""The evaluation pipeline behind ``easl evaluate``: policy, point estimates, analytic intervals, bootstrap, assemble.

:func:`evaluate` takes the responses x raters human matrix and the system score vectors and returns a typed
:class:`~core.metrics.results.Evaluation` in five named steps:

1. :func:`~core.metrics.prepare.prepare` applies the explicit score policy
   (:func:`core.metrics.data.apply_score_policy`) per rating, marks the responses of the comparisons with the first
   human column, and fixes the scale;
2. :func:`point_estimates` builds the comparisons the registry declares (:mod:`core.metrics.estimates.comparisons`, each
on
   its own responses and raters) and finishes every metric from their totals;
3. :func:`analytic` adds the closed-form standard errors, intervals and p-values
(:mod:`core.metrics.intervals.analytic`,
   :mod:`core.metrics.intervals.agreement_variance`);
4. :func:`bootstrap` resamples responses and finishes the same metrics on every resample;
5. :func:`~core.metrics.assemble.assemble` turns values, reasons and intervals into the result objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from core.metrics.assemble import assemble
from core.metrics.bootstrap import bootstrap_sums
from core.metrics.data import WEIGHTS, Scale, Weights, check_option
from core.metrics.estimates.comparisons import Comparisons, build
from core.metrics.estimates.pair import PairSuite, batch_values, point_values
from core.metrics.intervals.agreement_variance import named_inference
from core.metrics.intervals.analytic import T_METHOD, Analytic, pearson_analytic
from core.metrics.prepare import Prepared, prepare
from core.metrics.registry import REPORT_WEIGHTS
from core.metrics.results import Evaluation

# ---------------------------------------------------------------------------------------------------------------
# Step 2: point estimates.


def point_estimates(
    p: Prepared, rater_error_variance: float | None, weightings: tuple[Weights, ...] = REPORT_WEIGHTS
) -> tuple[Comparisons, dict[str, NDArray[Any]], dict[str, float], dict[str, str], list[str]]:
    """(comparisons, totals, values, reasons, cautions) of every figure on the sample itself."""
    comp = build(
        p.human,
        p.system,
        reference=p.reference,
        system_ok=p.system_ok,
        cats=p.cats,
        groups=p.groups,
        rater_error_variance=rater_error_variance,
        weightings=weightings,
    )
    totals = comp.totals()
    values, reasons, cautions = point_values(comp.finishers(totals))
    return comp, totals, values, reasons, cautions


# ---------------------------------------------------------------------------------------------------------------
# Step 3: analytic intervals.


def analytic(
    p: Prepared, comp: Comparisons, values: dict[str, float], *, confidence: float, population_size: float | None
) -> dict[str, Analytic]:
    """Closed-form intervals keyed like ``values``: Fisher z for r; Gwet's linearised standard errors with t
    intervals (irrCAC) for every chance-corrected coefficient of the pairwise and all-raters blocks."""
    out: dict[str, Analytic] = {}

    def pair(prefix: str, suite: PairSuite) -> None:
        out[prefix + "corr"] = pearson_analytic(values.get(prefix + "corr", np.nan), int(suite.rows.size), confidence)
        index = suite.category_index()
        if index is not None and comp.cats is not None:  # (a pair has a category index only with categories)
            out.update(_inference(prefix, index, comp.cats, confidence, population_size))

    for s, suite in comp.systems.items():
        pair(f"s:{s}:", suite)
    if comp.human_human is not None:
        pair("hh:", comp.human_human)
    if comp.raters is not None and comp.cats is not None:
        out.update(_inference("a:", comp.raters, comp.cats, confidence, population_size, comp.weightings))
    return out


def _inference(
    prefix: str,
    index: NDArray[Any],
    cats: NDArray[Any],
    confidence: float,
    population_size: float | None,
    weightings: tuple[Weights, ...] = REPORT_WEIGHTS,
) -> dict[str, Analytic]:
    res = named_inference(index, cats, confidence=confidence, population_size=population_size, weightings=weightings)
    return {prefix + k: Analytic(v.se, v.low, v.high, v.p_value, T_METHOD) for k, v in res.items()}


# ---------------------------------------------------------------------------------------------------------------
# Step 4: bootstrap.


def bootstrap(
    comp: Comparisons, n_resamples: int, seed: int, progress: Callable[[int, int], None] | None
) -> dict[str, NDArray[Any]]:
    """Resample responses ``n_resamples`` times (one seeded generator) and finish every figure on each resample.

    Sums-based figures are batched over each chunk of resamples; Spearman's rho and the fairness analyses are
    vectorised over the chunk's counts; Kendall's tau is recomputed per resample on the same draws.
    """
    rng = np.random.default_rng(seed)
    done = [0]

    def prog(k: int) -> None:
        done[0] += k
        if progress is not None:
            progress(done[0], n_resamples)

    return bootstrap_sums(
        comp.sums(),
        lambda t: batch_values(comp.finishers(t, with_ranks=False)),
        n_resamples,
        rng,
        per_resample=comp.per_resample,
        progress=prog,
        per_chunk=comp.per_chunk,
    )


# ---------------------------------------------------------------------------------------------------------------


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
    notes: list[str] = list(extra_notes or [])
    p = prepare(
        human, system, human_names=human_names, scale=scale, groups=groups, exclude_zeros=exclude_zeros, notes=notes
    )
    for w in weights:
        check_option("weights", w, WEIGHTS)
    if "ratio" in weights and p.cats is not None and (p.cats == 0).any():
        raise ValueError("ratio weights need categories other than 0")
    weightings = REPORT_WEIGHTS + tuple(w for w in dict.fromkeys(weights) if w not in REPORT_WEIGHTS)
    comp, totals, values, reasons, cautions = point_estimates(p, rater_error_variance, weightings)
    closed = analytic(p, comp, values, confidence=confidence, population_size=population_size)
    samples: dict[str, NDArray[Any]] = {}
    if n_bootstrap > 0 and p.n_reference >= 2:
        samples = bootstrap(comp, n_bootstrap, seed, progress)
    elif n_bootstrap > 0:
        p.notes.append("bootstrap skipped: it needs at least 2 responses")
    return assemble(
        p,
        comp,
        totals,
        values,
        reasons,
        cautions,
        closed,
        samples,
        n_resamples=n_bootstrap,
        seed=seed,
        confidence=confidence,
        group_name=group_name,
        rater_error_variance=rater_error_variance,
        base_group=base_group,
    )
