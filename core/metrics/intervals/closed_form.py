"""The analytic intervals of every figure of one evaluation that has them, keyed like the point estimates.

Pearson's r of every comparison: Fisher's z interval and scipy's p-value
(:func:`~core.metrics.intervals.analytic.pearson_analytic`); every chance-corrected coefficient of the pairwise and
all-raters blocks: Gwet's linearised standard error with a t-interval and p-value (irrCAC;
:mod:`core.metrics.intervals.agreement_variance`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from core.metrics.data import Weights
from core.metrics.estimates.agreement_totals import rating_patterns
from core.metrics.estimates.comparisons import Comparisons
from core.metrics.intervals.agreement_variance import Inference, pattern_inference
from core.metrics.intervals.analytic import T_METHOD, Analytic, pearson_analytic

#: The rating patterns of a comparison and their counts (``rating_patterns``).
Patterns = tuple[NDArray[Any], ...]


def closed_form_intervals(
    comp: Comparisons, values: dict[str, float], *, confidence: float, population_size: float | None
) -> dict[str, Analytic]:
    """Closed-form intervals keyed like ``values``: Fisher z for r; Gwet's linearised standard errors with t
    intervals (irrCAC) for every chance-corrected coefficient of the pairwise and all-raters blocks."""
    q = 0 if comp.cats is None else comp.cats.size
    pairs: dict[str, tuple[int, Patterns | None]] = {}
    for suite in [*comp.systems.values(), *([comp.human_human] if comp.human_human is not None else [])]:
        index = suite.category_index()  # (a pair has a category index only with categories)
        pairs[suite.prefix] = (int(suite.rows.size), None if index is None else rating_patterns(index, q))
    raters = None if comp.raters is None else rating_patterns(comp.raters[(comp.raters >= 0).any(axis=1)], q)
    return analytic_intervals(pairs, raters, values, comp.cats, comp.weightings, confidence, population_size)


def analytic_intervals(
    pairs: dict[str, tuple[int, Patterns | None]],
    raters: Patterns | None,
    values: dict[str, float],
    cats: NDArray[Any] | None,
    weightings: tuple[Weights, ...],
    confidence: float,
    population_size: float | None,
) -> dict[str, Analytic]:
    """The closed-form intervals of both engines: Pearson's r of every comparison of ``pairs`` (prefix -> (responses,
    rating patterns)) and the chance-corrected coefficients of its patterns and of the all-raters patterns ``raters``
    (:func:`~core.metrics.intervals.agreement_variance.pattern_inference`)."""
    kw: dict[str, Any] = {"confidence": confidence, "population_size": population_size}
    out: dict[str, Analytic] = {}
    for prefix, (n, patterns) in pairs.items():
        out[prefix + "corr"] = pearson_analytic(values.get(prefix + "corr", np.nan), n, confidence)
        if patterns is not None and cats is not None:
            out.update(as_analytic(prefix, pattern_inference(patterns[0], patterns[1], cats, **kw)))
    if raters is not None and cats is not None:
        out.update(as_analytic("a:", pattern_inference(raters[0], raters[1], cats, weightings=weightings, **kw)))
    return out


def as_analytic(prefix: str, inference: dict[str, Inference]) -> dict[str, Analytic]:
    """The :class:`Analytic` records of Gwet's t-intervals, keyed ``prefix + name``."""
    return {prefix + k: Analytic(v.se, v.low, v.high, v.p_value, T_METHOD) for k, v in inference.items()}
