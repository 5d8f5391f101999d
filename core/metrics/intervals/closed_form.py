"""The analytic intervals of every figure of one evaluation that has them, keyed like the point estimates.

Pearson's r of every comparison: Fisher's z interval and scipy's p-value
(:func:`~core.metrics.intervals.analytic.pearson_analytic`); every chance-corrected coefficient of the pairwise and
all-raters blocks: Gwet's linearised standard error with a t-interval and p-value (irrCAC;
:mod:`core.metrics.intervals.agreement_variance`). Both engines call :func:`closed_form_intervals`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from core.metrics.estimates.agreement_totals import rating_patterns
from core.metrics.estimates.comparisons import Comparisons, PointEstimates
from core.metrics.intervals.agreement_variance import Inference, pattern_inference
from core.metrics.intervals.analytic import T_METHOD, Analytic, pearson_analytic

#: The rating patterns of a comparison and their counts (``rating_patterns``).
Patterns = tuple[NDArray[Any], ...]


def closed_form_intervals(
    comp: Comparisons,
    point: PointEstimates,
    *,
    confidence: float,
    population_size: float | None,
    raters: Patterns | None = None,
) -> dict[str, Analytic]:
    """Closed-form intervals keyed like ``point.values``: Fisher z for r; Gwet's linearised standard errors with t
    intervals (irrCAC) for every chance-corrected coefficient of the pairwise blocks (their rating patterns are the
    cells of their joint tables) and of the all-raters block (the rating patterns ``raters``, computed from
    ``comp.raters`` when not given; the patterns of disjoint sets of subjects add, so the Dask engine merges them)."""
    cats, t = comp.cats, point.totals
    kw: dict[str, Any] = {"confidence": confidence, "population_size": population_size}
    out: dict[str, Analytic] = {}
    for suite in [*comp.systems.values(), *([comp.human_human] if comp.human_human is not None else [])]:
        p = suite.prefix
        out[p + "corr"] = pearson_analytic(point.values.get(p + "corr", np.nan), int(t[p + "n"]), confidence)
        if cats is not None:
            joint = t[p + "joint"].reshape(cats.size, cats.size)
            cells = np.argwhere(joint > 0)
            out.update(as_analytic(p, pattern_inference(cells, joint[cells[:, 0], cells[:, 1]], cats, **kw)))
    if raters is None and comp.raters is not None and cats is not None:
        raters = rating_patterns(comp.raters[(comp.raters >= 0).any(axis=1)], cats.size)
    if raters is not None and cats is not None:
        out.update(as_analytic("a:", pattern_inference(raters[0], raters[1], cats, weightings=comp.weightings, **kw)))
    return out


def as_analytic(prefix: str, inference: dict[str, Inference]) -> dict[str, Analytic]:
    """The :class:`Analytic` records of Gwet's t-intervals, keyed ``prefix + name``."""
    return {prefix + k: Analytic(v.se, v.low, v.high, v.p_value, T_METHOD) for k, v in inference.items()}
